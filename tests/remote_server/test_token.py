"""``acp-reference-agent --listen --token-file FILE`` on the library's server: ``401`` without the token (a POST,
a stream, the WebSocket upgrade), whole turns with it over HTTP and WebSocket (acp-session's own client, the token
in a header), the token in no log line; a token file others can read, and a non-loopback address without a token,
refused before anything listens (usage errors, no traceback)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from httpx_ws import WebSocketUpgradeError, aconnect_ws

from acp_session import ClientBuilder
from acp_session.transport.remote import RemoteDialer

from .conftest import AGENT, Server
from .raw_client import initialize_params

pytestmark = pytest.mark.anyio

BACKENDS = pytest.mark.parametrize("server_backend", ["asyncio", "trio"])
TOKEN = "reference-agent-token-0123456789"


def _token_file(tmp_path: Path, mode: int = 0o600) -> Path:
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n")
    path.chmod(mode)
    return path


def _init() -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": initialize_params()}


async def _upgrade_status(url: str, headers: dict[str, str]) -> int:
    async with httpx.AsyncClient(headers=headers) as client:
        try:
            async with aconnect_ws(url.replace("http://", "ws://"), client) as ws:
                await ws.send_text(json.dumps(_init()))
                assert json.loads(await ws.receive_text())["result"]["protocolVersion"] == 2
                assert ws.response is not None
                return ws.response.status_code
        except WebSocketUpgradeError as refused:
            return refused.response.status_code


@BACKENDS
async def test_without_the_token_401_with_it_whole_turns(
    start_server: Callable[..., Server], tmp_path: Path, server_backend: str
) -> None:
    server = start_server("--token-file", str(_token_file(tmp_path)), "--log-level", "DEBUG", backend=server_backend)
    async with httpx.AsyncClient() as client:
        for headers in ({}, {"authorization": "Bearer not-it"}):
            refused = await client.post(server.url, json=_init(), headers=headers)
            assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
            stream = await client.get(server.url, headers={**headers, "accept": "text/event-stream"})
            assert stream.status_code == 401
        accepted = await client.post(server.url, json=_init(), headers={"authorization": f"Bearer {TOKEN}"})
        assert accepted.status_code == 200 and accepted.json()["result"]["protocolVersion"] == 2
    assert await _upgrade_status(server.url, {}) == 401
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    for url in (server.url, "ws" + server.url.removeprefix("http")):
        builder = ClientBuilder("token-test", "1.0")
        async with builder.connect_url(RemoteDialer(url, headers=bearer)) as connection:
            conversation = await connection.start_conversation(str(tmp_path))
            reply = await conversation.chat_to_completion("hello")
            assert reply.stop_reason == "end_turn" and reply.text
    assert "without the server's token" in server.stderr()
    assert TOKEN not in server.stderr()


def _usage_error(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*AGENT, *args], capture_output=True, text=True, timeout=60)


def test_a_token_file_others_can_read_is_refused(tmp_path: Path) -> None:
    path = _token_file(tmp_path, 0o644)
    proc = _usage_error("--listen", "127.0.0.1:0", "--token-file", str(path))
    assert proc.returncode == 2 and not proc.stdout, proc.stderr
    assert f"chmod 600 {path}" in proc.stderr and "Traceback" not in proc.stderr and TOKEN not in proc.stderr
    proc = _usage_error("--listen", "127.0.0.1:0", "--token-file", str(tmp_path / "missing"))
    assert proc.returncode == 2 and "cannot read the token file" in proc.stderr
    proc = _usage_error("--token-file", str(_token_file(tmp_path)))
    assert proc.returncode == 2 and "go with --listen" in proc.stderr


def test_beyond_loopback_without_a_token_is_refused(tmp_path: Path) -> None:
    proc = _usage_error("--listen", "0.0.0.0:0")
    assert proc.returncode == 2 and not proc.stdout
    assert "beyond loopback, needs a token (--token-file)" in proc.stderr and "Traceback" not in proc.stderr


def test_beyond_loopback_with_a_token_is_served(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [*AGENT, "--listen", "0.0.0.0:0", "--token-file", str(_token_file(tmp_path))],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://0.0.0.0:") and url.endswith("/acp"), url
        local = url.replace("0.0.0.0", "127.0.0.1")
        refused = httpx.post(local, json=_init(), timeout=30)
        assert refused.status_code == 401
        accepted = httpx.post(local, json=_init(), headers={"authorization": f"Bearer {TOKEN}"}, timeout=30)
        assert accepted.status_code == 200
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=30)
    assert "Traceback" not in stderr
