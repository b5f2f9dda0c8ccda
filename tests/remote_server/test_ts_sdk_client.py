"""The official TypeScript SDK 2.4.0 client (``createHttpStream``, ``createWebSocketStream``) completes whole turns
against ``acp-reference-agent --listen`` over HTTP/1.1 and WebSocket: two sessions on one connection, streamed text,
a permission answered on the session stream, cancel (also of a pending permission request), config options and
closing one session while the other goes on. The server runs on asyncio and on trio."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.interop.conftest import HERE as INTEROP

from .conftest import Server

SCRIPT = INTEROP / "ts_remote_client.mjs"
STEPS = [
    "initialize",
    "two sessions at once",
    "streamed text",
    "permission allowed",
    "cancel with a pending permission request",
    "cancel a streaming turn",
    "config options",
    "closing one session while the other goes on",
]


@pytest.mark.parametrize("server_backend", ["asyncio", "trio"])
@pytest.mark.parametrize("profile", ["http", "ws"])
def test_the_ts_sdk_client_completes_turns(
    node: str, tmp_path: Path, start_server: Callable[..., Server], profile: str, server_backend: str
) -> None:
    server = start_server(backend=server_backend)
    proc = subprocess.run(
        [node, str(SCRIPT), "--profile", profile, "--cwd", str(tmp_path), "--url", server.url],
        cwd=INTEROP,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.stdout.strip(), f"no summary (exit {proc.returncode}):\n{proc.stderr}\nserver:\n{server.stderr()}"
    summary = json.loads(proc.stdout)
    failed = {step["name"]: step["error"] for step in summary["steps"] if not step["ok"]}
    assert failed == {}, "\n\n".join(f"{name}: {error}" for name, error in failed.items()) + "\n" + server.stderr()
    assert [step["name"] for step in summary["steps"]] == STEPS
    assert proc.returncode == 0 and summary["agent"]["name"] == "acp-reference-agent"
    assert "Traceback" not in server.stderr()
