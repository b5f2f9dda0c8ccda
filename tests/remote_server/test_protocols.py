"""``--listen`` speaks HTTP/2 (h2c with prior knowledge, and TLS with ALPN, a throwaway CA from trustme) and
WebSocket (101 with Acp-Connection-Id and the cookie, initialize first, text frames only), on both server backends."""

from __future__ import annotations

import json
import ssl
from collections.abc import Callable
from pathlib import Path

import anyio
import httpx
import pytest
import trustme
from httpx_ws import WebSocketDisconnect, aconnect_ws

from .conftest import Server
from .raw_client import RawAcp, initialize_params, text_of

pytestmark = pytest.mark.anyio


async def _whole_turn(client: httpx.AsyncClient, url: str, cwd: str) -> tuple[str, str]:
    """initialize, both streams, a streamed turn and DELETE; returns the reply and the HTTP version used."""
    async with anyio.create_task_group() as tg:
        acp = RawAcp(client, url, tg)
        init = await acp.initialize()
        await acp.open_stream()
        session = await acp.new_session(cwd)
        await acp.send_request(
            "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "/slow 3"}]}, session
        )
        updates = await acp.until_idle(session)
        assert (await acp.delete()).status_code == 202
        tg.cancel_scope.cancel()
    return text_of(updates), init.http_version


@pytest.mark.parametrize("server_backend", ["asyncio", "trio"])
async def test_h2c_prior_knowledge(start_server: Callable[..., Server], tmp_path: Path, server_backend: str) -> None:
    server = start_server(backend=server_backend)
    async with httpx.AsyncClient(http1=False, http2=True) as client:
        text, version = await _whole_turn(client, server.url, str(tmp_path))
    assert (text, version) == ("chunk 1. chunk 2. chunk 3. ", "HTTP/2")


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[trustme.CA, Path, Path]:
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    folder = tmp_path_factory.mktemp("tls")
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert.private_key_and_cert_chain_pem.write_to_path(str(cert_path))
    cert.private_key_pem.write_to_path(str(key_path))
    return ca, cert_path, key_path


@pytest.mark.parametrize("http2", [True, False], ids=["h2-alpn", "http1.1"])
@pytest.mark.parametrize("server_backend", ["asyncio", "trio"])
async def test_tls(
    start_server: Callable[..., Server],
    tmp_path: Path,
    certificate: tuple[trustme.CA, Path, Path],
    server_backend: str,
    http2: bool,
) -> None:
    ca, cert_path, key_path = certificate
    server = start_server("--tls-cert", str(cert_path), "--tls-key", str(key_path), backend=server_backend)
    assert server.url.startswith("https://127.0.0.1:")
    context = ssl.create_default_context()
    ca.configure_trust(context)
    async with httpx.AsyncClient(verify=context, http2=http2) as client:
        text, version = await _whole_turn(client, server.url, str(tmp_path))
    assert (text, version) == ("chunk 1. chunk 2. chunk 3. ", "HTTP/2" if http2 else "HTTP/1.1")
    # Without the CA, verification fails: the server's certificate is only trusted through it.
    async with httpx.AsyncClient() as untrusting:
        with pytest.raises(httpx.ConnectError):
            await untrusting.post(server.url, json={})


def _ws_url(server: Server) -> str:
    return server.url.replace("http://", "ws://")


def _request(id: int, method: str, params: dict[str, object]) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": id, "method": method, "params": params})


@pytest.mark.parametrize("server_backend", ["asyncio", "trio"])
async def test_websocket_turn(start_server: Callable[..., Server], tmp_path: Path, server_backend: str) -> None:
    server = start_server(backend=server_backend)
    async with httpx.AsyncClient() as client, aconnect_ws(_ws_url(server), client) as ws:
        assert ws.response is not None and ws.response.status_code == 101
        assert ws.response.headers["acp-connection-id"]
        assert "acp_affinity=" in ws.response.headers["set-cookie"]
        await ws.send_text(_request(0, "initialize", initialize_params()))
        assert json.loads(await ws.receive_text())["result"]["protocolVersion"] == 2
        await ws.send_bytes(b'{"jsonrpc": "2.0", "id": 99, "method": "session/list", "params": {}}')  # ignored
        await ws.send_text(_request(1, "session/new", {"cwd": str(tmp_path), "mcpServers": []}))
        answer = json.loads(await ws.receive_text())
        assert answer["id"] == 1, "the binary frame was not ignored"
        session = answer["result"]["sessionId"]
        await ws.send_text(
            _request(2, "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "/slow 3"}]})
        )
        updates = []
        while True:
            message = json.loads(await ws.receive_text())
            if message.get("method") == "session/update":
                updates.append(message["params"]["update"])
                if updates[-1] == {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}:
                    break
        assert text_of(updates) == "chunk 1. chunk 2. chunk 3. "
        over_http = await client.post(
            server.url,
            content=_request(4, "session/list", {}),
            headers={"content-type": "application/json", "acp-connection-id": ws.response.headers["acp-connection-id"]},
        )
        assert over_http.status_code == 400  # a WebSocket connection is served on its socket only
        await ws.send_text(f"[{_request(3, 'session/list', {})}]")
        batch = json.loads(await ws.receive_text())
        assert batch["id"] is None and batch["error"]["code"] == -32600


async def test_websocket_needs_initialize_first(start_server: Callable[..., Server]) -> None:
    server = start_server()
    async with httpx.AsyncClient() as client, aconnect_ws(_ws_url(server), client) as ws:
        await ws.send_text(_request(1, "session/list", {}))
        with pytest.raises(WebSocketDisconnect) as closed:
            await ws.receive_text()
    assert closed.value.code == 1002
