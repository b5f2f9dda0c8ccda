"""Session lifecycle and ActiveSession commands over a scripted stdio agent (issue 4, parts 3-6)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_session import CapabilityNotSupported, ClientBuilder, SessionClosed
from acp_session.errors import InvalidParams, RequestCancelled
from acp_session.schema.types import (
    AudioContent,
    ImageContent,
    McpServerStdio,
    RequestPermissionRequest,
    ResourceLink,
    TextContent,
    UpdateSessionNotification,
)
from tests.client.support import assert_valid, methods, scripted, sent

pytestmark = pytest.mark.anyio


async def wait_for(predicate: Any) -> None:
    while not predicate():
        await anyio.sleep(0.01)


def answers(log: Path) -> dict[Any, Any]:
    return {m["id"]: m.get("result", m.get("error")) for m in sent(log) if "method" not in m}


async def test_new_session_validates_paths_and_capabilities_locally(tmp_path: Path) -> None:
    with anyio.fail_after(5):
        async with scripted(tmp_path) as (client, log):
            with pytest.raises(ValueError):
                await client.new_session("relative/dir")
            with pytest.raises(ValueError):
                await client.new_session("/w", additional_directories=["rel"])
            with pytest.raises(CapabilityNotSupported):
                await client.new_session("/w", additional_directories=["/other"])
            with pytest.raises(CapabilityNotSupported):
                await client.new_session("/w", mcp_servers=[McpServerStdio(name="m", command="/bin/m")])
            session = await client.new_session("/w")
            assert session.session_id == "s1" and session.connection is client
        async with scripted(tmp_path, capabilities={}) as (client, _):
            with pytest.raises(CapabilityNotSupported):
                await client.new_session("/w")
            with pytest.raises(CapabilityNotSupported):
                await client.delete_session("x")
    assert methods(log) == ["initialize", "session/new", "initialize"]  # nothing else was sent
    assert_valid(sent(log))


async def test_list_sessions_walks_every_page_and_delete_is_idempotent(tmp_path: Path) -> None:
    with anyio.fail_after(5):
        async with scripted(tmp_path) as (client, log):
            ids = [info.session_id async for info in client.list_sessions(cwd="/w")]
            assert ids == ["a", "b", "c", "d"]
            await client.delete_session("a")
            await client.delete_session("gone")  # -32002 counts as deleted
    cursors = [m["params"].get("cursor") for m in sent(log) if m.get("method") == "session/list"]
    assert cursors == [None, "p2", "p3"]
    assert_valid(sent(log))


async def test_resume_replays_before_returning_and_sends_cwd(tmp_path: Path) -> None:
    """ACP2-068: resume sends the session's cwd; replayed updates reach an async handler before resume returns."""
    seen: list[str] = []

    async def on_update(note: UpdateSessionNotification) -> None:
        await anyio.sleep(0.05)
        seen.append(type(note.update).__name__)

    with anyio.fail_after(5):
        async with scripted(tmp_path, ClientBuilder().on_session_update(on_update)) as (client, log):
            session = await client.resume_session("old", "/w", replay_from="start")
            assert seen == ["UserMessage", "AgentMessage", "StateUpdate"]
            assert session.session_id == "old"
    resume = next(m for m in sent(log) if m.get("method") == "session/resume")
    assert resume["params"] == {"sessionId": "old", "cwd": "/w", "replayFrom": {"type": "start"}}
    assert_valid(sent(log))


async def test_prompt_is_sent_at_call_time_and_cleaned(tmp_path: Path) -> None:
    """ACP2-085: no empty prompt; ACP2-084: only the block types the agent allows."""
    with anyio.fail_after(5):
        async with scripted(tmp_path) as (client, log):
            session = await client.new_session("/w")
            for bad in ("", "\x00\x07"):
                with pytest.raises(ValueError):
                    session.send_prompt(bad)
            with pytest.raises(ValueError):
                session.send_prompt_blocks([])
            with pytest.raises(CapabilityNotSupported):
                session.send_prompt_blocks([AudioContent(data="AA==", mime_type="audio/wav")])
            sent_request = session.send_prompt("he\x1bllo\n\tworld\x7f")
            other = session.send_prompt_blocks(
                [ImageContent(data="AA==", mime_type="image/png"), ResourceLink(name="r", uri="file:///w/r")]
            )
            assert (await sent_request).message_id and (await other).message_id
    prompts = [m["params"]["prompt"] for m in sent(log) if m.get("method") == "session/prompt"]
    assert prompts[0] == [{"type": "text", "text": "hello\n\tworld"}]
    assert [b["type"] for b in prompts[1]] == ["image", "resource_link"]
    assert_valid(sent(log))


async def test_held_prompt_can_be_withdrawn_and_tracking_shows_it(tmp_path: Path) -> None:
    """ACP2-001: after $/cancel_request the client still waits for the agent's answer (-32800 here)."""
    with anyio.fail_after(5):
        async with scripted(tmp_path) as (client, log):
            session = await client.new_session("/w")
            held = session.send_prompt("hold")
            second = session.send_prompt("while busy")  # not gated by the library
            assert (await second).message_id
            await wait_for(lambda: [p.request for p in session.pending_prompts] == [held])
            held.cancel()
            with pytest.raises(RequestCancelled):
                await held
            await wait_for(lambda: not session.pending_prompts)
            statuses = {p.request.id: p.status for p in session.prompts}
            assert statuses.get(held.id, "cancelled") == "cancelled"
    cancels = [m for m in sent(log) if m.get("method") == "$/cancel_request"]
    assert cancels[0]["params"] == {"requestId": held.id}
    assert_valid(sent(log))


async def test_prompt_joined_to_user_message_either_order(tmp_path: Path) -> None:
    with anyio.fail_after(5):
        async with scripted(tmp_path) as (client, _):
            session = copy.copy(await client.new_session("/w"))  # a clone sees the same tracking
            before = session.send_prompt("user message first")
            after = session.send_prompt("response_first")
            await before
            await after
            await wait_for(lambda: all(p.user_message is not None for p in session.prompts))
            joined = {p.message_id: p.user_message for p in session.prompts}
            assert all(m is not None and m.message_id == k for k, m in joined.items())
            assert all(p.status == "inserted" for p in session.prompts) or not session.prompts


async def test_set_config_option_sends_the_right_form(tmp_path: Path) -> None:
    with anyio.fail_after(5):
        async with scripted(tmp_path) as (client, log):
            session = await client.new_session("/w")
            options = await session.set_config_option("mode", "code")
            assert [o.config_id for o in options] == ["mode", "fast"]  # type: ignore[union-attr]
            assert (await session.set_config_option("fast", True))[0].current_value is True  # type: ignore[union-attr]
            with pytest.raises(InvalidParams):
                await session.set_config_option("nope", "x")
    forms = [(m["params"]["type"], m["params"]["value"]) for m in sent(log) if "set_config" in m.get("method", "")]
    assert forms == [("id", "code"), ("boolean", True), ("id", "x")]
    assert_valid(sent(log))


async def test_close_is_idempotent_and_blocks_later_calls(tmp_path: Path) -> None:
    """ACP2-074: a -32002 answer to session/close counts as a successful close."""
    with anyio.fail_after(5):
        async with scripted(tmp_path, close_error={"code": -32002, "message": "Resource not found"}) as (client, log):
            session = await client.new_session("/w")
            clone = session.clone()
            await session.close()
            await clone.close()
            with pytest.raises(SessionClosed):
                clone.send_prompt("hi")
            with pytest.raises(SessionClosed):
                await session.cancel_active_work()
    assert methods(log).count("session/close") == 1
    assert_valid(sent(log))


async def test_cancel_tool_call_and_terminal_follow_advertised_capabilities(tmp_path: Path) -> None:
    """ACP2-078, ACP2-079: tool_call/cancel and terminal/cancel only while capabilities.cancel is advertised."""
    with anyio.fail_after(5):
        async with scripted(tmp_path) as (client, log):
            session = await client.new_session("/w")
            await session.send_prompt("tools")
            await wait_for(lambda: "t1" in session.track.cancellable_terminals)
            with pytest.raises(CapabilityNotSupported):
                await session.cancel_tool_call("tc2")  # advertised, then withdrawn with null
            with pytest.raises(CapabilityNotSupported):
                await session.cancel_terminal("t9")
            await session.cancel_tool_call("tc1")
            await session.cancel_terminal("t1")
    assert [m for m in methods(log) if m.endswith("/cancel")] == ["tool_call/cancel", "terminal/cancel"]
    assert_valid(sent(log))


async def test_cancel_active_work_answers_foreground_permissions_only(tmp_path: Path) -> None:
    """ACP2-092: the cancelled work's permission requests are answered cancelled; background ones keep waiting."""
    asked: list[str] = []

    async def never(request: RequestPermissionRequest) -> str:
        asked.append(request.title)
        await anyio.sleep(30)
        return "yes"

    with anyio.fail_after(5):
        async with scripted(tmp_path, ClientBuilder().on_request_permission(never)) as (client, log):
            session = await client.new_session("/w")
            await session.send_prompt("background")
            await wait_for(lambda: len(client.interactions.pending("s1")) == 2)
            assert await session.cancel_active_work() == 1
            await wait_for(lambda: "agent-2" in answers(log))
            assert "agent-1" not in answers(log)  # background work keeps its request
            assert [i.tool_call_id for i in client.interactions.pending("s1")] == ["bg"]
            await session.close()  # closing answers the rest
            await wait_for(lambda: "agent-1" in answers(log))
    assert answers(log)["agent-2"] == {"outcome": {"outcome": "cancelled"}}
    assert answers(log)["agent-1"] == {"outcome": {"outcome": "cancelled"}}
    order = methods(log)
    assert order.index("session/cancel") < next(i for i, m in enumerate(sent(log)) if m.get("id") == "agent-2")
    assert_valid(sent(log))


async def test_peer_cancel_request_answers_cancelled_outcome(tmp_path: Path) -> None:
    """ACP2-001/ACP2-002: a $/cancel_request stops the handler; exactly one answer, the cancelled outcome."""
    stopped = anyio.Event()

    async def slow(request: RequestPermissionRequest) -> str:
        try:
            await anyio.sleep(30)
        finally:
            stopped.set()
        return "yes"

    with anyio.fail_after(5):
        async with scripted(tmp_path, ClientBuilder().on_request_permission(slow)) as (client, log):
            session = await client.new_session("/w")
            await session.send_prompt("peer_cancels_permission")
            await stopped.wait()
            await wait_for(lambda: "agent-1" in answers(log))
            await anyio.sleep(0.1)
    replies = [m for m in sent(log) if m.get("id") == "agent-1"]
    assert len(replies) == 1 and replies[0]["result"] == {"outcome": {"outcome": "cancelled"}}
    assert_valid(sent(log))


async def test_slow_permission_handler_does_not_delay_updates(tmp_path: Path) -> None:
    chunks: list[str] = []

    async def human(request: RequestPermissionRequest) -> str:
        await anyio.sleep(10)
        return "yes"

    def on_update(note: UpdateSessionNotification) -> None:
        content = getattr(note.update, "content", None)
        if isinstance(content, TextContent):
            chunks.append(content.text)

    builder = ClientBuilder().on_request_permission(human).on_session_update(on_update)
    with anyio.fail_after(3):
        async with scripted(tmp_path, builder) as (client, _):
            session = await client.new_session("/w")
            await session.send_prompt("slow_permission")
            # The chunks are folded inline while the request handler starts in its own task: wait for both.
            await wait_for(lambda: len(chunks) == 5 and client.interactions.pending())
            assert len(client.interactions.pending()) == 1


async def test_updates_for_unknown_sessions_reach_the_handler(tmp_path: Path) -> None:
    notes: list[UpdateSessionNotification] = []
    with anyio.fail_after(5):
        async with scripted(tmp_path, ClientBuilder().on_session_update(notes.append)) as (client, _):
            session = await client.new_session("/w")
            await session.send_prompt("foreign")
            await wait_for(lambda: any(n.session_id == "nobody" for n in notes))
