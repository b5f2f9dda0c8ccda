"""A host run in this process (``open_host``, both backends) before the reference agent, driven by raw HTTP clients:
a permission request asked while nobody is attached is asked again on attach and answered once; two clients on
one session see the same updates, and a permission answered by one is withdrawn from the other
(``$/cancel_request``); a session is served only to a connection attached to it."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from acp_session.host import Host, HostEvent, HostOptions, open_host
from tests.remote_server.raw_client import RawAcp, text_of

pytestmark = pytest.mark.anyio

AGENT = [sys.executable, "-m", "acp_conformance.agent"]
ALLOW = {"outcome": {"outcome": "selected", "optionId": "allow-once"}}


@pytest.fixture
async def host() -> AsyncIterator[Host]:
    events: list[HostEvent] = []
    async with open_host(HostOptions(agent=AGENT, permission_timeout=60), on_event=events.append) as running:
        running.events = events  # type: ignore[attr-defined]
        yield running


def _prompt(session: str, text: str) -> dict[str, Any]:
    return {"sessionId": session, "prompt": [{"type": "text", "text": text}]}


async def _resume(acp: RawAcp, session: str, cwd: str) -> dict[str, Any]:
    await acp.open_stream(session)
    params = {"sessionId": session, "cwd": cwd, "mcpServers": [], "replayFrom": {"type": "start"}}
    return await acp.call("session/resume", params, session)


def _asks(acp: RawAcp) -> list[dict[str, Any]]:
    return [m for _, m in acp.seen if m.get("method") == "session/request_permission"]


def _is_ask(stream: str | None, message: dict[str, Any]) -> bool:
    return message.get("method") == "session/request_permission"


async def test_a_permission_asked_while_detached_is_asked_again_and_answered_once(host: Host, tmp_path: Path) -> None:
    cwd = str(tmp_path)
    assert host.url is not None
    client = httpx.AsyncClient()
    async with anyio.create_task_group() as tg:
        first = RawAcp(client, host.url, tg)
        session = await first.start(cwd)
        await first.send_request("session/prompt", _prompt(session, "/permission"), session)
        await first.next_message(_is_ask)
        tg.cancel_scope.cancel()  # the client goes away without answering
    await client.aclose()
    with anyio.fail_after(30):
        while host.sessions[session].attached:
            await anyio.sleep(0.05)  # the server notices the dropped connection
    assert host.sessions[session].state == "requires_action"
    async with httpx.AsyncClient() as client, anyio.create_task_group() as tg:
        second = RawAcp(client, host.url, tg)
        await second.connect()
        assert "result" in await _resume(second, session, cwd)
        assert second.updates_seen()[-1]["state"] == "requires_action"  # the snapshot after the replay
        asked = await second.next_message(_is_ask)
        assert asked["params"]["sessionId"] == session
        assert (await second.post({"jsonrpc": "2.0", "id": asked["id"], "result": ALLOW}, session)).status_code == 202
        updates = await second.until_idle(session)
        assert text_of(updates) == "Done: build/ was removed."
        assert updates[-1]["stopReason"] == "end_turn"
        assert len(_asks(second)) == 1
        tg.cancel_scope.cancel()
    answered = [e for e in host.events if e.kind == "permission_answered"]  # type: ignore[attr-defined]
    assert len(answered) == 1 and answered[0].detail["optionId"] == "allow-once"


async def test_two_clients_see_the_same_updates_and_one_answer_withdraws_the_other(host: Host, tmp_path: Path) -> None:
    cwd = str(tmp_path)
    assert host.url is not None
    async with httpx.AsyncClient() as one, httpx.AsyncClient() as two, anyio.create_task_group() as tg:
        a = RawAcp(one, host.url, tg)
        b = RawAcp(two, host.url, tg)
        session = await a.start(cwd)
        await b.connect()
        # Not attached yet: b may not prompt the session.
        await b.open_stream(session)
        refused = await b.call("session/prompt", _prompt(session, "too early"), session)
        assert refused["error"]["code"] == -32002
        assert "result" in await b.call(
            "session/resume",
            {"sessionId": session, "cwd": cwd, "mcpServers": [], "replayFrom": {"type": "start"}},
            session,
        )
        b_before = len(b.updates_seen())
        await a.send_request("session/prompt", _prompt(session, "/slow 5"), session)
        seen_a = await a.until_idle(session)
        seen_b = await b.until_idle(session)
        assert seen_a[-len(seen_b) :] == seen_b and len(b.updates_seen()) > b_before
        assert text_of(seen_b).endswith("chunk 5. ")
        await a.send_request("session/prompt", _prompt(session, "/permission"), session)
        asked_a = await a.next_message(_is_ask)
        asked_b = await b.next_message(_is_ask)
        assert (await b.post({"jsonrpc": "2.0", "id": asked_b["id"], "result": ALLOW}, session)).status_code == 202
        withdrawn = await a.next_message(lambda stream, m: m.get("method") == "$/cancel_request")
        assert withdrawn["params"]["requestId"] == asked_a["id"]
        assert text_of(await a.until_idle(session)) == "Done: build/ was removed."
        assert text_of(await b.until_idle(session)) == "Done: build/ was removed."
        assert len(_asks(a)) == 1 and len(_asks(b)) == 1
        tg.cancel_scope.cancel()
