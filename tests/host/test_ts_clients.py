"""The official TypeScript SDK 2.4.0 remote clients (``createHttpStream``, ``createWebSocketStream``) complete turns
through ``acp-session serve``: with the reference agent (its whole remote interop run: two sessions, streaming,
permissions, cancels, config options, close), the TS SDK's v2 agent, and the 0.17.0 SDK's v1 example agent, which
a v2 client reaches through the library's adapters. The host runs on asyncio for HTTP and on trio for WebSocket."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.interop.conftest import HERE as INTEROP
from tests.interop.conftest import TS_AGENT
from tests.schema_source import TS_V1_AGENT

from .conftest import Host

PROFILES = [pytest.param("http", "asyncio", id="http-asyncio"), pytest.param("ws", "trio", id="ws-trio")]


@pytest.mark.parametrize(("profile", "backend"), PROFILES)
def test_the_ts_sdk_clients_whole_run_through_the_host(
    node: str, tmp_path: Path, start_host: Callable[..., Host], profile: str, backend: str
) -> None:
    host = start_host(backend=backend)
    proc = subprocess.run(
        [node, str(INTEROP / "ts_remote_client.mjs"), "--profile", profile, "--cwd", str(tmp_path), "--url", host.url],
        cwd=INTEROP,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.stdout.strip(), f"no summary (exit {proc.returncode}):\n{proc.stderr}\nhost:\n{host.stderr()}"
    summary = json.loads(proc.stdout)
    failed = {step["name"]: step["error"] for step in summary["steps"] if not step["ok"]}
    assert failed == {}, "\n\n".join(f"{name}: {error}" for name, error in failed.items()) + "\n" + host.stderr()
    assert proc.returncode == 0 and summary["agent"]["name"] == "acp-reference-agent"


@pytest.mark.parametrize(("profile", "backend"), PROFILES)
@pytest.mark.parametrize("agent", ["ts-v2", "ts-v1"])
def test_a_ts_sdk_client_turn_with_a_ts_agent(
    node: str, tmp_path: Path, start_host: Callable[..., Host], profile: str, backend: str, agent: str
) -> None:
    command = f"{node} {TS_AGENT}" if agent == "ts-v2" else f"{node} {TS_V1_AGENT}"
    host = start_host(agent=command, backend=backend)
    assert host.wait_for("agent_started")["protocolVersion"] == (2 if agent == "ts-v2" else 1)
    proc = subprocess.run(
        [node, str(INTEROP / "ts_remote_turn.mjs"), "--profile", profile, "--cwd", str(tmp_path), "--url", host.url],
        cwd=INTEROP,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}\nhost:\n{host.stderr()}"
    turn = json.loads(proc.stdout)
    assert turn["protocolVersion"] == 2 and turn["stopReason"] == "end_turn"
    if agent == "ts-v2":
        assert turn["text"] == "You said: hello"
    else:  # the v1 example agent reads a file, asks to edit it, and reports
        assert turn["text"].startswith("I'll help you with that.") and turn["permissionsAsked"] == 1
    ended = host.wait_for("turn_ended", sessionId=turn["sessionId"])
    assert ended["stopReason"] == "end_turn"
