"""Sessions belong to the ``--listen`` server, not to one connection: a new connection resumes them; a turn
running when its connection (HTTP or WebSocket) dropped goes on, its updates come once in the replay, and a
permission request it still waits for is asked again on the connection that resumed the session."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from httpx_ws import aconnect_ws

from .conftest import Server
from .raw_client import RawAcp, initialize_params, text_of

pytestmark = pytest.mark.anyio


@pytest.fixture
def server(start_server: Callable[..., Server]) -> Server:
    return start_server()


def _prompt(session: str, text: str) -> dict[str, Any]:
    return {"sessionId": session, "prompt": [{"type": "text", "text": text}]}


async def _resume(acp: RawAcp, session: str, cwd: str) -> dict[str, Any]:
    if session not in acp.stream_ended:
        await acp.open_stream(session)
    params = {"sessionId": session, "cwd": cwd, "mcpServers": [], "replayFrom": {"type": "start"}}
    return await acp.call("session/resume", params, session)


async def _prompt_then_cut(
    server: Server, cwd: str, text: str, until: Callable[[str | None, dict[str, Any]], bool]
) -> str:
    """A new session's prompt on a first connection, dropped the way a network drops it once ``until`` saw a
    message: the readers stop and every TCP connection closes. Returns the session id."""
    client = httpx.AsyncClient()
    async with anyio.create_task_group() as tg:
        first = RawAcp(client, server.url, tg)
        session = await first.start(cwd)
        await first.send_request("session/prompt", _prompt(session, text), session)
        await first.next_message(until)
        tg.cancel_scope.cancel()
    await client.aclose()
    return session


async def test_a_new_connection_resumes_the_servers_sessions(server: Server, tmp_path: Path) -> None:
    cwd = str(tmp_path)
    async with httpx.AsyncClient() as client, anyio.create_task_group() as tg:
        first = RawAcp(client, server.url, tg)
        session = await first.start(cwd)
        await first.send_request("session/prompt", _prompt(session, "hello"), session)
        told = text_of(await first.until_idle(session))
        assert (await first.delete()).status_code == 202
        tg.cancel_scope.cancel()
    async with httpx.AsyncClient() as client, anyio.create_task_group() as tg:
        second = RawAcp(client, server.url, tg)
        await second.connect()
        listed = await second.call("session/list", {})
        assert [s["sessionId"] for s in listed["result"]["sessions"]] == [session]
        # Not served by this connection until it resumes the session.
        await second.open_stream(session)
        refused = await second.call("session/prompt", _prompt(session, "too early"), session)
        assert refused["error"]["code"] == -32002
        answer = await _resume(second, session, cwd)
        assert "result" in answer
        replayed = second.updates_seen()
        assert text_of(replayed) == told
        assert replayed[-1] == {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}
        await second.send_request("session/prompt", _prompt(session, "/slow 2"), session)
        assert text_of(await second.until_idle(session)).endswith("chunk 1. chunk 2. ")
        tg.cancel_scope.cancel()


@pytest.mark.parametrize("resume_while_running", [False, True], ids=["after-the-turn", "during-the-turn"])
async def test_a_turn_outlives_its_connection(server: Server, tmp_path: Path, resume_while_running: bool) -> None:
    cwd = str(tmp_path)
    session = await _prompt_then_cut(server, cwd, "/slow 25", lambda stream, m: "chunk 3." in str(m))
    if not resume_while_running:
        await anyio.sleep(3.5)  # the turn ends while no connection serves the session
    async with httpx.AsyncClient() as client, anyio.create_task_group() as tg:
        second = RawAcp(client, server.url, tg)
        await second.connect()
        await _resume(second, session, cwd)
        updates = second.updates_seen()
        snapshot = updates[-1]
        assert snapshot["sessionUpdate"] == "state_update"
        assert snapshot["state"] == ("running" if resume_while_running else "idle")
        if resume_while_running:
            updates += await second.until_idle(session)
        expected = "".join(f"chunk {n}. " for n in range(1, 26))
        assert text_of(updates) == expected  # every chunk exactly once: replayed, held, then live
        assert updates[-1] == {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}
        tg.cancel_scope.cancel()


async def test_a_pending_permission_is_asked_again_after_resume(server: Server, tmp_path: Path) -> None:
    cwd = str(tmp_path)
    session = await _prompt_then_cut(
        server, cwd, "/permission", lambda stream, m: m.get("method") == "session/request_permission"
    )
    async with httpx.AsyncClient() as client, anyio.create_task_group() as tg:
        second = RawAcp(client, server.url, tg)
        await second.connect()
        answer = await _resume(second, session, cwd)
        assert "result" in answer
        snapshot = second.updates_seen()[-1]
        assert snapshot["state"] == "requires_action"
        asked = await second.next_message(lambda stream, m: m.get("method") == "session/request_permission")
        assert second.seen[-1][0] == session and asked["params"]["sessionId"] == session
        allow = {"outcome": {"outcome": "selected", "optionId": "allow-once"}}
        assert (await second.post({"jsonrpc": "2.0", "id": asked["id"], "result": allow}, session)).status_code == 202
        updates = await second.until_idle(session)
        assert text_of(updates) == "Done: build/ was removed."
        assert updates[-1]["stopReason"] == "end_turn"
        asks = [m for _, m in second.seen if m.get("method") == "session/request_permission"]
        assert len(asks) == 1  # asked once on this connection
        tg.cancel_scope.cancel()


async def test_a_turn_outlives_a_closed_websocket_and_resumes_over_http(server: Server, tmp_path: Path) -> None:
    cwd = str(tmp_path)
    async with httpx.AsyncClient() as client, aconnect_ws(server.url.replace("http://", "ws://"), client) as ws:
        await ws.send_text(
            json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": initialize_params()})
        )
        await ws.receive_text()
        await ws.send_text(
            json.dumps({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": cwd, "mcpServers": []}})
        )
        session = json.loads(await ws.receive_text())["result"]["sessionId"]
        await ws.send_text(
            json.dumps({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": _prompt(session, "/slow 15")})
        )
        while "chunk 2." not in await ws.receive_text():
            pass
    async with httpx.AsyncClient() as client, anyio.create_task_group() as tg:
        second = RawAcp(client, server.url, tg)
        await second.connect()
        await _resume(second, session, cwd)
        updates = second.updates_seen()
        if updates[-1].get("state") != "idle":
            updates += await second.until_idle(session)
        assert text_of(updates) == "".join(f"chunk {n}. " for n in range(1, 16))
        tg.cancel_scope.cancel()


async def test_a_store_file_keeps_sessions_across_server_restarts(
    start_server: Callable[..., Server], tmp_path: Path
) -> None:
    cwd = str(tmp_path)
    store = str(tmp_path / "sessions.json")
    first_server = start_server("--store", store)
    async with httpx.AsyncClient() as client, anyio.create_task_group() as tg:
        first = RawAcp(client, first_server.url, tg)
        session = await first.start(cwd)
        await first.send_request("session/prompt", _prompt(session, "/slow 2"), session)
        await first.until_idle(session)
        tg.cancel_scope.cancel()
    first_server.stop()
    assert first_server.process.returncode == 0  # SIGTERM is a clean stop
    second_server = start_server("--store", store)
    async with httpx.AsyncClient() as client, anyio.create_task_group() as tg:
        second = RawAcp(client, second_server.url, tg)
        await second.connect()
        await _resume(second, session, cwd)
        replayed = second.updates_seen()
        assert text_of(replayed) == "chunk 1. chunk 2. "
        tg.cancel_scope.cancel()
