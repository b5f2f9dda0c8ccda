"""receive_steps() / receive_chunks() / send() / compaction_indices over real pipes, on asyncio and trio.

The stream agent (agents/stream_agent.py) reports work between turns and paces many messages; the chat agent
(agents/chat_agent.py) keeps its sessions in a store, so a second process resumes them with replay.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_session import ClientBuilder, ClientConnection
from acp_session.conversation import (
    ChatTurn,
    ChunkStream,
    Compaction,
    CompactionChanged,
    Message,
    MessageChanged,
    StateChanged,
    Step,
    StepStream,
    StreamOverflow,
    StreamOverflowError,
    TextChunk,
    ToolCallChunk,
    TurnAlreadyConsumed,
)
from acp_session.errors import ConnectionClosed
from tests.conversation.chat_support import chat_agent

pytestmark = pytest.mark.anyio

STREAM_AGENT = Path(__file__).parent / "agents" / "stream_agent.py"


def stream_agent_argv(tmp_path: Path) -> list[str]:
    return [sys.executable, str(STREAM_AGENT), str(tmp_path / "agent.log")]


@asynccontextmanager
async def stream_agent(tmp_path: Path) -> AsyncIterator[ClientConnection]:
    async with ClientBuilder("stream-tests", "1.0").spawn(stream_agent_argv(tmp_path)) as client:
        yield client


async def buffered(stream: StepStream | ChunkStream) -> list[Any]:
    """What the stream holds now, without waiting."""
    out: list[Any] = []
    with anyio.move_on_after(0):
        async for item in stream:
            out.append(item)
    return out


async def test_background_work_between_turns_reaches_receive_chunks(tmp_path: Path) -> None:
    """After the turn ended (idle, nothing pending) the agent reports a new background tool call and a message
    of its own: no turn gets them, the session-level streams do."""
    with anyio.fail_after(15):
        async with stream_agent(tmp_path) as client:
            conversation = await client.start_conversation("/w")
            chunks = conversation.receive_chunks()
            steps = conversation.receive_steps()
            response = await conversation.chat_to_completion("later")
            assert response.text == "ok" and conversation.is_idle and conversation.pending_turns == []
            during = await buffered(chunks)
            assert [(type(c).__name__, getattr(c, "text", None)) for c in during] == [("TextChunk", "ok")]
            between: list[Any] = []
            async for chunk in chunks:  # the agent reports its background work 0.2 s after the idle
                between.append(chunk)
                if isinstance(chunk, TextChunk):
                    break
            assert conversation.is_idle and conversation.pending_turns == []
            tool, note = between
            assert isinstance(tool, ToolCallChunk) and tool.tool_call.tool_call_id == "bg-1"
            assert tool.tool_call.title == "Index"
            assert note == TextChunk("index ready", "note-1", conversation.history().index(note_message(conversation)))
            # The completion of the background tool call is an update of a known id: no second chunk.
            await wait_until(lambda: conversation.state.background == [])
            assert await buffered(chunks) == []
            assert conversation.state.tool_calls["bg-1"].status == "completed"
            # receive_steps() saw all of it, the background list included.
            got = await buffered(steps)
            between_steps = got[[s.event for s in got].index(completed(got)) + 1 :]
            kinds = [type(s.event).__name__ for s in between_steps]
            assert kinds == ["ToolCallChanged", "StateChanged", "MessageChanged", "ToolCallChanged", "StateChanged"]
            backgrounds = [s.event.background for s in between_steps if isinstance(s.event, StateChanged)]
            assert [len(b or []) for b in backgrounds] == [1, 0]
            assert not any(s.replayed for s in got)
            # The turn's own response never saw it.
            assert response.tool_calls == [] and "index ready" not in conversation.last_response


def note_message(conversation: Any) -> Message:
    return conversation.state.message("note-1")  # type: ignore[no-any-return]


def completed(steps: list[Step]) -> Any:
    return next(s.event for s in steps if isinstance(s.event, StateChanged) and s.event.completed)


async def wait_until(condition: Any) -> None:
    while not condition():
        await anyio.sleep(0.01)


async def test_two_consumers_at_different_speeds(tmp_path: Path) -> None:
    """The fast consumer gets every message; the slow one keeps what fit in its buffer and gets a marker where
    the rest was dropped: every message is either delivered or counted, in order."""
    count = 60
    with anyio.fail_after(20):
        async with stream_agent(tmp_path) as client:
            conversation = await client.start_conversation("/w")
            fast = conversation.receive_chunks()
            slow = conversation.receive_chunks(max_buffer=8)
            strict = conversation.receive_chunks(max_buffer=8, overflow="error")
            fast_got: list[Any] = []
            slow_got: list[Any] = []
            stop_slow = anyio.CancelScope()

            async def read_fast() -> None:
                async for chunk in fast:
                    fast_got.append(chunk)
                    if len(fast_got) == count:
                        return

            async def read_slow() -> None:
                with stop_slow:
                    async for chunk in slow:
                        slow_got.append(chunk)
                        await anyio.sleep(0.05)

            async with anyio.create_task_group() as tg:
                tg.start_soon(read_fast)
                tg.start_soon(read_slow)
                await conversation.send(f"messages {count} 5")
                await conversation.wait_for_idle()
                stop_slow.cancel()  # everything has arrived; what the slow reader has not read yet is buffered
            slow_got += await buffered(slow)
    assert [c.text for c in fast_got] == [f"m{n}" for n in range(count)]
    assert not any(isinstance(c, StreamOverflow) for c in fast_got)
    markers = [c for c in slow_got if isinstance(c, StreamOverflow)]
    texts = [c.text for c in slow_got if isinstance(c, TextChunk)]
    assert markers and slow.dropped == sum(m.dropped for m in markers)
    assert texts[:8] == [f"m{n}" for n in range(8)]  # what fit before it fell behind
    # Each marker sits exactly where its messages were lost: delivered or counted, in order, nothing else.
    expected = 0
    for chunk in slow_got:
        if isinstance(chunk, StreamOverflow):
            expected += chunk.dropped
        else:
            assert chunk.text == f"m{expected}"
            expected += 1
    assert expected == count
    # The "error" consumer that never read: its buffered items, then the error.
    got: list[Any] = []
    with pytest.raises(StreamOverflowError) as caught:
        async for chunk in strict:
            got.append(chunk)
    assert [c.text for c in got] == [f"m{n}" for n in range(8)] and caught.value.dropped == strict.dropped == 1


async def test_send_registers_the_turn_and_wait_for_idle_ends_it(tmp_path: Path) -> None:
    with anyio.fail_after(10):
        async with chat_agent(tmp_path) as client:
            conversation = await client.start_conversation("/w")
            chunks = conversation.receive_chunks()
            turn = await conversation.send("stream 4")
            assert isinstance(turn, ChatTurn) and conversation.pending_turns == [turn] and not conversation.is_idle
            with pytest.raises(TurnAlreadyConsumed):
                turn.__aiter__()
            await conversation.wait_for_idle()
            assert turn.finished and conversation.pending_turns == []
            assert conversation.turn_count == 1 and conversation.turn_start_indices == [0]
            assert conversation.last_response == "w0 w1 w2 w3 "
            response = await turn
            assert response.text == "w0 w1 w2 w3 " and response.stop_reason == "end_turn"
            assert response.message_id == conversation.history()[0].message_id  # type: ignore[union-attr]
            got = await buffered(chunks)
            assert [(c.kind, c.text) for c in got] == [("thought", "thinking..."), ("text", "w0 w1 w2 w3 ")]
            assert not turn._queue  # it kept no events for a reader
            # A second send is a second turn boundary.
            await conversation.send("stream 1")
            await conversation.wait_for_idle()
            assert conversation.turn_count == 2 and conversation.turn_start_indices == [0, 3]


async def test_replays_through_receive_steps_match_the_live_steps(tmp_path: Path) -> None:
    """The agent replays the session on another connection: receive_steps() shows every replayed update,
    marked, on the same entities and in the same order as live; receive_chunks() shows none of it."""
    with anyio.fail_after(15):
        async with chat_agent(tmp_path) as client:
            conversation = await client.start_conversation("/w")
            live_stream = conversation.receive_steps()
            await conversation.chat_to_completion("tools")
            await conversation.chat_to_completion("stream 2")
        # The connection is gone: the open stream gives what it buffered, then ConnectionClosed.
        live: list[Step] = []
        with pytest.raises(ConnectionClosed):
            async for step in live_stream:
                live.append(step)  # type: ignore[arg-type]
        assert live and not any(s.replayed for s in live)
        replay_stream = conversation.receive_steps()  # opened after the loss: it waits for reconnect()
        chunks = conversation.receive_chunks()
        async with chat_agent(tmp_path) as client:
            await conversation.reconnect(client, "/w")
            replayed = await buffered(replay_stream)
            assert await buffered(chunks) == []
            assert replayed and all(s.replayed for s in replayed)
            response = await conversation.chat_to_completion("stream 1")
            after = await buffered(replay_stream)
            assert not any(s.replayed for s in after)
            assert [c.text for c in await buffered(chunks) if isinstance(c, TextChunk)] == ["w0 "]
        assert response.text == "w0 "

    def history_steps(steps: list[Step]) -> list[tuple[str, int, Any]]:
        return [(type(s.event).__name__, id(s.entry), getattr(s.event, "appended", None)) for s in steps if s.entry]

    # Live, the conversation saw the two turns; the replay re-sends them (after the session's first idle).
    assert history_steps(replayed) == history_steps(live)
    history = conversation.history()
    assert all(history[s.index] is s.entry for s in replayed if s.entry is not None)
    assert isinstance(replayed[-1].event, StateChanged) and not replayed[-1].event.completed  # the resume snapshot
    assert conversation.turn_count == 3


async def test_compaction_indices_end_to_end(tmp_path: Path) -> None:
    with anyio.fail_after(10):
        async with stream_agent(tmp_path) as client:
            conversation = await client.start_conversation("/w")
            steps = conversation.receive_steps()
            await conversation.chat_to_completion("hello")
            assert conversation.compaction_indices == []
            response = await conversation.chat_to_completion("compact")
            assert response.text == "compacted"
            history = conversation.history()
            assert conversation.turn_start_indices == [0, 2]
            assert conversation.compaction_indices == [3]
            compaction = history[3]
            assert isinstance(compaction, Compaction) and compaction.status == "completed"
            assert compaction.summary_text == "Earlier: a greeting. Nothing else."
            got = await buffered(steps)
            compaction_steps = [s for s in got if isinstance(s.event, CompactionChanged)]
            assert len(compaction_steps) == 4 and {s.index for s in compaction_steps} == {3}
            assert [type(s.event) for s in got].count(MessageChanged) == 4  # two user messages, two replies


async def test_a_stream_is_an_async_context_manager_and_ends_with_disconnect(tmp_path: Path) -> None:
    with anyio.fail_after(10):
        async with stream_agent(tmp_path) as client:
            conversation = await client.start_conversation("/w")
            async with conversation.receive_chunks() as chunks:
                await conversation.chat_to_completion("hello")
                assert [c.kind for c in await buffered(chunks)] == ["text"]
            assert chunks.closed and conversation._streams is None
            steps = conversation.receive_steps()
            await conversation.chat_to_completion("hello")
            await conversation.disconnect()
            got = [s async for s in steps]  # buffered steps, then the end
            assert got and isinstance(got[-1].event, StateChanged) and got[-1].event.completed
