"""The host's feeds in bulk (a v2 client's updates put on its SSE stream a batch at a time, a WebSocket's burst
written at once): a host in this process (``open_host``, both backends) before an agent that streams 3 000 chunks
as fast as the pipe takes them. Two clients on the session, one over Streamable HTTP and one over WebSocket, each
see every update once, in order, the same; a client that attaches afterwards, over either profile, is replayed
exactly what they saw."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from acp_session.host import Host, HostOptions, open_host
from tests.host.test_fell_behind import AGENT, INIT, RawWebSocket, _chunks
from tests.remote_server.raw_client import RawAcp

pytestmark = pytest.mark.anyio

N = 3000


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[Host]:
    agent = tmp_path / "fast_agent.py"
    agent.write_text(AGENT)
    async with open_host(HostOptions(agent=[sys.executable, str(agent), str(N)])) as running:
        yield running


def _resume(replay: bool, cwd: str) -> dict[str, Any]:
    params: dict[str, Any] = {"sessionId": "s1", "cwd": cwd, "mcpServers": []}
    if replay:
        params["replayFrom"] = {"type": "start"}
    return params


async def _websocket_until_idle(ws: RawWebSocket) -> list[dict[str, Any]]:
    updates: list[dict[str, Any]] = []
    async for message in ws.messages():
        if message.get("method") == "session/update":
            updates.append(message["params"]["update"])
            if updates[-1] == {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}:
                return updates
    raise AssertionError(f"the WebSocket ended first: {ws.closed}")


async def _replayed_over_http(url: str, cwd: str) -> list[dict[str, Any]]:
    async with httpx.AsyncClient() as client, anyio.create_task_group() as tg:
        acp = RawAcp(client, url, tg)
        await acp.connect()
        await acp.open_stream("s1")
        answer = await acp.call("session/resume", _resume(True, cwd), "s1")
        assert "result" in answer, answer
        tg.cancel_scope.cancel()
    return acp.updates_seen()


async def _replayed_over_websocket(url: str, cwd: str) -> list[dict[str, Any]]:
    ws = await RawWebSocket.connect(url)
    seen: list[dict[str, Any]] = []
    async with ws.stream:
        await ws.call(0, "initialize", INIT, seen)
        answer = await ws.call(1, "session/resume", _resume(True, cwd), seen)
    assert "result" in answer, answer
    return [m["params"]["update"] for m in seen if m.get("method") == "session/update"]


async def test_both_profiles_see_every_update_once_and_a_replay_is_exact(host: Host, tmp_path: Path) -> None:
    assert host.url is not None
    cwd = str(tmp_path)
    ws = await RawWebSocket.connect(host.url)
    async with ws.stream, httpx.AsyncClient() as client, anyio.create_task_group() as tg:
        acp = RawAcp(client, host.url, tg)
        await acp.start(cwd)
        await ws.call(0, "initialize", INIT, [])
        assert "result" in await ws.call(1, "session/resume", _resume(False, cwd), [])
        await acp.send_request("session/prompt", {"sessionId": "s1", "prompt": [{"type": "text", "text": "go"}]}, "s1")
        with anyio.fail_after(60):
            over_http = await acp.until_idle("s1")
            over_websocket = await _websocket_until_idle(ws)
        tg.cancel_scope.cancel()
    live = over_http
    assert _chunks([{"method": "session/update", "params": {"update": u}} for u in live]) == list(range(N))
    assert over_websocket == live  # attached with no replay (its snapshot came before its answer): the turn
    snapshot = {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}
    with anyio.fail_after(60):
        assert await _replayed_over_http(host.url, cwd) == [*live, snapshot]
        assert await _replayed_over_websocket(host.url, cwd) == [*live, snapshot]
