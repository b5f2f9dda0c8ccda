"""Conversation.chat end to end over real pipes against the chat agent (asyncio and trio)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from acp_session import CapabilityNotSupported, ClientBuilder
from acp_session.conversation import (
    ChatDone,
    ChatError,
    ChatEvent,
    ChatNotice,
    ChatProgress,
    ChatStart,
    ChatText,
    ChatToolBegin,
    ChatToolEnd,
    ChatTurn,
    TurnAlreadyConsumed,
    prompt_content,
)
from acp_session.errors import ConnectionClosed
from acp_session.schema import RequestPermissionRequest
from tests.conversation.chat_support import chat_agent, kinds

pytestmark = pytest.mark.anyio


async def collect(turn: ChatTurn) -> list[ChatEvent]:
    return [event async for event in turn]


def check_shape(events: list[ChatEvent]) -> None:
    """start first, exactly one terminal event last, tool begin/end paired."""
    assert isinstance(events[0], ChatStart)
    assert sum(isinstance(e, (ChatDone, ChatError)) for e in events) == 1
    assert isinstance(events[-1], (ChatDone, ChatError))
    begun = [e.tool_call.tool_call_id for e in events if isinstance(e, ChatToolBegin)]
    ended = [e.tool_call.tool_call_id for e in events if isinstance(e, ChatToolEnd)]
    assert sorted(begun) == sorted(ended) and len(set(begun)) == len(begun)


async def test_streaming_turn_yields_fragments_and_one_done(tmp_path: Path) -> None:
    """ACP2-045: the session/new idle snapshot is no completion; the turn ends at the new idle only."""
    with anyio.fail_after(10):
        async with chat_agent(tmp_path) as client:
            conversation = await client.start_conversation("/w")
            assert conversation.is_idle and conversation.turn_count == 0
            events = await collect(conversation.chat("stream 50"))
            check_shape(events)
            done = events[-1]
            assert isinstance(done, ChatDone)
            reply = "".join(e.text for e in events if isinstance(e, ChatText))
            assert reply == done.response.text == "".join(f"w{i} " for i in range(50))
            assert done.response.thinking == "thinking..."
            assert done.response.stop_reason == "end_turn"
            assert done.response.message_id == events[0].message_id  # type: ignore[attr-defined]
            assert [step.role for step in done.response.steps] == ["user", "thought", "agent"]  # type: ignore[union-attr]
            assert conversation.turn_count == 1 and conversation.last_response == reply
            assert conversation.state.usage is not None and conversation.state.usage.used == 150
            assert [m.role for m in conversation.messages()] == ["user", "agent"]
            assert conversation.messages()[0].text == "stream 50"
            await conversation.wait_for_idle()  # returns at once


async def test_chat_to_completion_tools_and_progress(tmp_path: Path) -> None:
    with anyio.fail_after(10):
        async with chat_agent(tmp_path) as client:
            conversation = await client.start_conversation("/w")
            events = await collect(conversation.chat("tools"))
            check_shape(events)
            progress = [e for e in events if isinstance(e, ChatProgress)]
            assert progress and progress[-1].entries[0].status == "completed"  # the whole plan, every time
            assert all(len(e.entries) == 1 for e in progress)
            end = next(e for e in events if isinstance(e, ChatToolEnd))
            assert end.status == "completed" and end.tool_call.text == "file body"
            response = await conversation.chat_to_completion("tools")
            assert response.text == "done reading" and [c.status for c in response.tool_calls] == ["completed"]
            assert [type(s).__name__ for s in response.steps] == ["Message", "Plan", "ToolCall", "Message"]
            assert conversation.turn_count == 2


async def test_permission_answer_decides_the_tool_outcome(tmp_path: Path) -> None:
    asked: list[str] = []

    def on_permission(request: RequestPermissionRequest) -> str:
        asked.append(request.title)
        return "yes"

    builder = ClientBuilder().on_request_permission(on_permission)
    with anyio.fail_after(10):
        async with chat_agent(tmp_path, builder) as client:
            conversation = await client.start_conversation("/w")
            events = await collect(conversation.chat("permission"))
            check_shape(events)
            done = events[-1]
            assert isinstance(done, ChatDone)
            assert asked == ["Edit file?"] and done.response.text == "approved"
            assert [c.status for c in done.response.tool_calls] == ["completed"]


async def test_cancel_marks_tool_calls_and_ends_with_cancelled(tmp_path: Path) -> None:
    """ACP2-040 / ACP2-096: after session/cancel the client marks unfinished tool calls cancelled at once,
    still applies the agent's later updates, and the turn ends on the idle with stop reason cancelled."""
    with anyio.fail_after(10):
        async with chat_agent(tmp_path) as client:
            conversation = await client.start_conversation("/w")
            turn = conversation.chat("slow")
            events: list[ChatEvent] = []
            async for event in turn:
                events.append(event)
                if isinstance(event, ChatText) and event.text == "working":
                    await conversation.cancel()
                    calls = conversation.state.tool_calls.values()
                    assert [c.status for c in calls] == ["cancelled", "cancelled"]  # before the agent says so
            check_shape(events)
            done = events[-1]
            assert isinstance(done, ChatDone) and done.response.cancelled
            assert done.response.text == "working late"  # the late chunk was still applied
            assert {e.status for e in events if isinstance(e, ChatToolEnd)} == {"cancelled"}
            assert conversation.is_idle


async def test_held_prompt_runs_after_the_first_with_its_own_events(tmp_path: Path) -> None:
    with anyio.fail_after(10):
        async with chat_agent(tmp_path) as client:
            conversation = await client.start_conversation("/w")
            first = conversation.chat("busy 0.3")
            second = conversation.chat("stream 2")  # sent at once; the agent holds it
            assert len(conversation.pending_turns) == 2 and not conversation.is_idle
            results: dict[str, list[ChatEvent]] = {}

            async def read(name: str, turn: ChatTurn) -> None:
                results[name] = await collect(turn)

            async with anyio.create_task_group() as tg:
                tg.start_soon(read, "first", first)
                tg.start_soon(read, "second", second)
            for events in results.values():
                check_shape(events)
            assert kinds(results["first"]) == ["start", "text", "done"]
            assert "".join(e.text for e in results["second"] if isinstance(e, ChatText)) == "w0 w1 "
            assert results["first"][0].message_id != results["second"][0].message_id  # type: ignore[attr-defined]
            assert conversation.turn_count == 2 and conversation.is_idle


async def test_background_work_stays_out_of_the_turn(tmp_path: Path) -> None:
    """ACP2-045: the later repeated idle (background finished) is not a completion and ends nothing."""
    with anyio.fail_after(10):
        async with chat_agent(tmp_path) as client:
            conversation = await client.start_conversation("/w")
            events = await collect(conversation.chat("background"))
            check_shape(events)
            done = events[-1]
            assert isinstance(done, ChatDone) and done.response.text == "started indexing"
            completions = conversation.state.completions
            with anyio.fail_after(3):
                while conversation.state.tool_calls["bg"].status != "completed":
                    await anyio.sleep(0.02)
            assert conversation.state.completions == completions
            assert conversation.state.background == []


async def test_user_message_before_the_answer_is_claimed(tmp_path: Path) -> None:
    with anyio.fail_after(10):
        async with chat_agent(tmp_path) as client:
            conversation = await client.start_conversation("/w")
            events = await collect(conversation.chat("userfirst"))
            check_shape(events)
            assert "".join(e.text for e in events if isinstance(e, ChatText)) == "w0 w1 w2 "


async def test_notice_is_a_live_event(tmp_path: Path) -> None:
    with anyio.fail_after(10):
        async with chat_agent(tmp_path) as client:
            conversation = await client.start_conversation("/w")
            events = await collect(conversation.chat("notice 2"))
            check_shape(events)
            notices = [e for e in events if isinstance(e, ChatNotice)]
            assert [n.notice.title for n in notices] == ["heads up"]
            assert all(type(entry).__name__ == "Message" for entry in conversation.history())


async def test_agent_death_ends_the_turn_with_connection_closed(tmp_path: Path) -> None:
    with anyio.fail_after(10):
        async with chat_agent(tmp_path) as client:
            conversation = await client.start_conversation("/w")
            dying = conversation.chat("die 5")
            held = conversation.chat("stream 1")  # held by the agent behind the dying turn
            events = await collect(dying)
            assert isinstance(events[-1], ChatError) and isinstance(events[-1].error, ConnectionClosed)
            assert "".join(e.text for e in events if isinstance(e, ChatText)) == "w0 w1 "
            with pytest.raises(ConnectionClosed):
                await held  # the held prompt fails too
            with pytest.raises(ConnectionClosed):
                await conversation.wait_for_idle()
            with pytest.raises(ConnectionClosed):
                conversation.chat("again")


async def test_awaiting_and_iterating_the_same_turn_raises(tmp_path: Path) -> None:
    with anyio.fail_after(10):
        async with chat_agent(tmp_path) as client:
            conversation = await client.start_conversation("/w")
            turn = conversation.chat("stream 1")
            response = await turn
            with pytest.raises(TurnAlreadyConsumed):
                turn.__aiter__()
            iterated = conversation.chat("stream 1")
            events = await collect(iterated)
            with pytest.raises(TurnAlreadyConsumed):
                await iterated
            assert response.text == "w0 " and kinds(events)[-1] == "done"


async def test_prompt_content_is_checked_before_sending(tmp_path: Path) -> None:
    """ACP2-084: audio is not in this agent's prompt capabilities, so nothing is sent."""
    with anyio.fail_after(10):
        async with chat_agent(tmp_path) as client:
            conversation = await client.start_conversation("/w")
            with pytest.raises(CapabilityNotSupported):
                conversation.chat([prompt_content.text("hi"), prompt_content.audio(b"RIFF", "audio/wav")])
            assert conversation.is_idle and not conversation.pending_turns
            note = tmp_path / "note.txt"
            note.write_text("remember this")
            blocks = [prompt_content.text("stream 1"), prompt_content.embedded_file(note)]
            blocks.append(prompt_content.image(b"\x89PNG", "image/png"))
            response = await conversation.chat_to_completion(blocks)
            user = conversation.messages()[0]
            assert response.text == "w0 " and [type(b).__name__ for b in user.content] == [
                "TextContent",
                "EmbeddedResource",
                "ImageContent",
            ]
