"""Conversation.receive_steps() / receive_chunks() in process: what they carry, the fast path, overflow, cost.

The streams are fed by the fold; these tests feed the conversation's listener directly (one note at a time,
or a run as the connection hands it over) and read what the streams buffered.
"""

from __future__ import annotations

from typing import Any

import anyio
import msgspec
import pytest
from hypothesis import given, settings

from acp_session import Conversation
from acp_session.conversation import (
    Compaction,
    CompactionChanged,
    ConfigOptionsChanged,
    MessageChanged,
    SessionState,
    StateChanged,
    ToolCallChanged,
)
from acp_session.conversation.streams import (
    ChunkStream,
    Step,
    StepStream,
    StreamOverflow,
    StreamOverflowError,
    TextChunk,
    ThoughtChunk,
    ToolCallChunk,
    entry_of,
)
from acp_session.schema import SetSessionConfigOptionResponse, UpdateSessionNotification

from .test_batch_delivery import OPS, notes_of
from .wire import chunk, state, text, tool, update, upsert

pytestmark = pytest.mark.anyio


def note(item: Any, session_id: str = "s1") -> UpdateSessionNotification:
    return UpdateSessionNotification(session_id=session_id, update=item)


def conversation(max_history_size: int = 0) -> Conversation:
    made = Conversation(max_history_size=max_history_size)
    made.state.session_id = "s1"
    return made


async def buffered(stream: StepStream | ChunkStream) -> list[Any]:
    """What the stream holds now: ready items come without a checkpoint, the first wait is cancelled."""
    out: list[Any] = []
    with anyio.move_on_after(0):
        async for item in stream:
            out.append(item)
    return out


def run_batch(target: Conversation, notes: list[UpdateSessionNotification]) -> None:
    """What the connection does with one read's run of updates (see BatchUpdateListener): each stretch of the
    listener's own session goes to it in one call; other sessions' updates go elsewhere."""
    own = [item for item in notes if item.session_id == target.state.session_id]
    if own:
        target._on_notes(own)


def compaction(compaction_id: str, status: str = "completed") -> Any:
    return update({"sessionUpdate": "compaction_update", "compactionId": compaction_id, "status": status})


# -- cost: nothing installed without a consumer ---------------------------------------------------------------


async def test_no_stream_no_hook_and_the_hook_goes_with_the_last_stream() -> None:
    made = conversation()
    assert made._streams is None and made._apply == made.state.apply
    steps, chunks = made.receive_steps(), made.receive_chunks()
    assert made._streams is not None and made._apply == made._streams.apply
    steps.close()
    assert made._streams is not None  # the chunk stream is still open
    async with chunks:
        pass
    assert made._streams is None and made._apply == made.state.apply
    assert steps.closed and chunks.closed
    assert await buffered(steps) == [] and await buffered(chunks) == []


# -- receive_steps(): one Step per fold event -----------------------------------------------------------------


def reference_steps(notes: list[UpdateSessionNotification]) -> list[tuple[Any, int]]:
    """The fold events of the same notes folded one at a time into a fresh state, with their entry positions
    (events point at live entities: compared as they are at the end)."""
    fresh = SessionState("s1")
    out = []
    for item in notes:
        if item.session_id != "s1":
            continue
        event = fresh.apply(item.update)
        entry = entry_of(event)
        out.append((event, -1 if entry is None else entry.position))
    return [(msgspec.to_builtins(event), index) for event, index in out]


@settings(max_examples=150, deadline=None)
@given(OPS, OPS)
def test_steps_equal_the_fold_events_whether_runs_take_the_fast_path_or_not(first: Any, second: Any) -> None:
    """Runs of chunks of known messages are appended in a short loop and handed to the streams once per run;
    a reader still sees one Step per update, equal to what SessionState.apply returns for it."""
    notes = notes_of(first) + notes_of(second)
    made = conversation()
    steps = made.receive_steps()
    run_batch(made, notes_of(first))
    run_batch(made, notes_of(second))
    got = anyio.run(buffered, steps)
    assert all(type(step) is Step and not step.replayed for step in got)
    assert [(msgspec.to_builtins(step.event), step.index) for step in got] == reference_steps(notes)


async def test_two_step_streams_see_the_same_steps_and_one_closing_does_not_disturb_the_other() -> None:
    made = conversation()
    first, second = made.receive_steps(), made.receive_steps()
    run_batch(made, [note(chunk("a", "x")), note(chunk("a", "y")), note(state("running"))])
    one = await buffered(first)
    first.close()
    run_batch(made, [note(chunk("a", "z"))])
    two = await buffered(second)
    assert [s.event for s in one] == [s.event for s in two[:3]]
    assert [(type(s.event).__name__, getattr(s.event, "appended", None)) for s in two] == [
        ("MessageChanged", text_block("x")),
        ("MessageChanged", text_block("y")),
        ("StateChanged", None),
        ("MessageChanged", text_block("z")),
    ]


def text_block(value: str) -> Any:
    from acp_session.schema import TextContent

    return TextContent(text=value)


async def test_step_index_is_the_history_index_at_fold_time_and_trimming_shifts_it() -> None:
    made = conversation(max_history_size=8)
    steps = made.receive_steps()
    for n in range(12):
        made._on_note(note(upsert(f"m{n}", [f"t{n}"])))
    got = await buffered(steps)
    history = made.history()
    assert len(history) == 8
    # When each message was folded it was the newest entry; history() never shows more than 8.
    assert [s.index for s in got] == [0, 1, 2, 3, 4, 5, 6, 7, 7, 7, 7, 7]
    assert got[-1].entry is history[-1]
    assert history.index(got[-1].entry) == got[-1].index


async def test_local_edits_and_answers_are_steps_too() -> None:
    """A set_config_option answer's option list is folded where it sits on the wire: it is a step."""
    made = conversation()
    steps = made.receive_steps()
    made._on_options_answer(SetSessionConfigOptionResponse(config_options=[]))
    (step,) = await buffered(steps)
    assert isinstance(step.event, ConfigOptionsChanged) and step.index == -1 and step.entry is None


async def test_a_replay_is_marked_and_is_no_chunk() -> None:
    """Inside a resume window with replay the fold rebuilds history: steps show it (replayed), chunks do not."""
    made = conversation()
    live = [note(upsert("u", ["hi"], kind="user_message")), note(chunk("a", "hello")), note(tool("t1"))]
    for item in live:
        made._on_note(item)
    steps, chunks = made.receive_steps(), made.receive_chunks()
    made.state.begin_resume(replay=True)
    for item in [*live, note(state("idle"))]:
        made._on_note(item)
    from acp_session.schema import ResumeSessionResponse

    made.state.apply_resume_response(ResumeSessionResponse())
    made._on_note(note(chunk("a2", "live again")))
    got = await buffered(steps)
    assert [s.replayed for s in got] == [True, True, True, True, False]
    assert [s.entry for s in got[:3]] == list(made.history()[:3])  # rebuilt in place: the same entities
    assert [s.index for s in got[:3]] == [0, 1, 2]
    assert await buffered(chunks) == [TextChunk("live again", "a2", 3)]


# -- receive_chunks(): what the agent shows the user ----------------------------------------------------------


async def test_chunks_keep_agent_text_thoughts_and_each_tool_call_once() -> None:
    made = conversation()
    chunks = made.receive_chunks()
    run_batch(
        made,
        [
            note(upsert("u", ["question"], kind="user_message")),  # the user's own message: not a chunk
            note(state("running")),
            note(chunk("t", "let me ", kind="agent_thought")),
            note(chunk("t", "think", kind="agent_thought")),
            note(chunk("a", "The ")),
            note(chunk("a", "answer")),
            note(chunk("a", {"type": "image", "data": "AAAA", "mimeType": "image/png"})),  # no text: nothing
            note(tool("t1", title="Read", status="pending")),
            note(tool("t1", status="in_progress")),  # the same id: no second chunk
            note(update({"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": "p", "entries": []}})),
            note(compaction("c1")),
            note(tool("t2", status="pending")),
            note(chunk("a", " is 42")),
            note(chunk("a", "other session"), session_id="s2"),
            note(state("idle", stopReason="end_turn")),
        ],
    )
    got = await buffered(chunks)
    t1, t2 = made.state.tool_calls["t1"], made.state.tool_calls["t2"]
    assert got == [
        ThoughtChunk("let me think", "t", 1),
        TextChunk("The answer", "a", 2),
        ToolCallChunk(t1, 3),
        ToolCallChunk(t2, 6),
        TextChunk(" is 42", "a", 2),
    ]
    assert got[2].tool_call.status == "in_progress"  # the live entity  # type: ignore[attr-defined]


async def test_a_rewritten_message_is_a_replaced_chunk() -> None:
    made = conversation()
    chunks = made.receive_chunks()
    made._on_note(note(upsert("a", ["first draft"])))
    made._on_note(note(upsert("a", ["second draft"])))
    made._on_note(note(upsert("t", ["hmm"], kind="agent_thought")))
    assert await buffered(chunks) == [
        TextChunk("first draft", "a", 0),
        TextChunk("second draft", "a", 0, replaced=True),
        ThoughtChunk("hmm", "t", 1),
    ]


async def test_a_tool_call_trimmed_and_named_again_is_new_history_and_a_new_chunk() -> None:
    made = conversation(max_history_size=2)
    chunks = made.receive_chunks()
    made._on_note(note(tool("t1")))
    for n in range(4):
        made._on_note(note(upsert(f"m{n}", [f"x{n}"])))
    assert "t1" not in made.state.tool_calls
    made._on_note(note(tool("t1", status="completed")))
    got = [c for c in await buffered(chunks) if isinstance(c, ToolCallChunk)]
    assert [c.tool_call.tool_call_id for c in got] == ["t1", "t1"] and got[0].tool_call is not got[1].tool_call


# -- falling behind ----------------------------------------------------------------------------------------------


async def test_mark_policy_a_marker_where_the_gap_is_then_items_that_fit_again() -> None:
    made = conversation()
    slow = made.receive_chunks(max_buffer=3)
    fast = made.receive_chunks()
    for n in range(10):
        made._on_note(note(chunk(f"m{n}", f"m{n}")))
    assert slow.dropped == 7
    first = await buffered(slow)
    assert first == [TextChunk("m0", "m0", 0), TextChunk("m1", "m1", 1), TextChunk("m2", "m2", 2), StreamOverflow(7)]
    made._on_note(note(chunk("m10", "m10")))
    assert await buffered(slow) == [TextChunk("m10", "m10", 10)]
    assert [c.text for c in await buffered(fast)] == [f"m{n}" for n in range(11)]  # the fast one lost nothing


async def test_mark_policy_the_gap_sits_between_what_was_kept() -> None:
    """A full buffer read by one item accepts one more after the marker: the marker stays where the loss was."""
    made = conversation()
    stream = made.receive_steps(max_buffer=2)
    for n in range(4):
        made._on_note(note(upsert(f"m{n}", ["x"])))
    first = await anext_ready(stream)
    made._on_note(note(upsert("m4", ["x"])))  # still no room: the marker holds a slot
    second = await anext_ready(stream)
    made._on_note(note(upsert("m5", ["x"])))  # fits after the marker
    rest = await buffered(stream)
    assert [first.index, second.index] == [0, 1]
    assert rest == [StreamOverflow(3), Step(rest[1].event, 5)]


async def anext_ready(stream: StepStream) -> Any:
    items = []
    with anyio.move_on_after(0):
        items.append(await stream.__anext__())
    (item,) = items
    return item


async def test_runs_that_do_not_fit_count_as_the_steps_they_were() -> None:
    made = conversation()
    stream = made.receive_steps(max_buffer=1)
    made._on_note(note(state("running")))
    run_batch(made, [note(chunk("a", "x"))])  # creates the message: one step, dropped
    run_batch(made, [note(chunk("a", "y")), note(chunk("a", "z"))])  # a run of two chunks, dropped
    got = await buffered(stream)
    assert isinstance(got[0].event, StateChanged) and got[1:] == [StreamOverflow(3)]


async def test_error_policy_buffered_items_then_the_error_then_the_end() -> None:
    made = conversation()
    stream = made.receive_chunks(max_buffer=2, overflow="error")
    other = made.receive_steps()
    for n in range(5):
        made._on_note(note(chunk(f"m{n}", f"m{n}")))
    assert stream.closed and stream.dropped == 1  # it stopped receiving at the first item that did not fit
    got: list[Any] = []
    with pytest.raises(StreamOverflowError) as caught:
        async for item in stream:
            got.append(item)
    assert got == [TextChunk("m0", "m0", 0), TextChunk("m1", "m1", 1)]
    assert caught.value.dropped == 1 and caught.value.max_buffer == 2
    assert await buffered(stream) == []  # ended
    assert len(await buffered(other)) == 5  # the other consumer is unaffected
    assert made._streams is not None


def test_bad_stream_options_are_refused() -> None:
    made = conversation()
    with pytest.raises(ValueError):
        made.receive_steps(max_buffer=0)
    with pytest.raises(ValueError):
        made.receive_chunks(overflow="drop")  # type: ignore[arg-type]


async def test_a_waiting_consumer_wakes_on_the_next_event() -> None:
    made = conversation()
    stream = made.receive_chunks()
    got: list[Any] = []

    async def consume() -> None:
        async for item in stream:
            got.append(item)
            if len(got) == 2:
                return

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await anyio.sleep(0.01)
            made._on_note(note(chunk("a", "one")))
            await anyio.sleep(0.01)
            made._on_note(note(tool("t1")))
    assert [c.kind for c in got] == ["text", "tool_call"]


async def test_disconnect_ends_the_streams_after_their_buffered_items_and_later_ones_at_once() -> None:
    made = conversation()
    stream = made.receive_steps()
    made._on_note(note(chunk("a", "x")))
    await made.disconnect()  # no session: nothing to close, the streams end
    assert [type(s.event) for s in [s async for s in stream]] == [MessageChanged]
    late = made.receive_chunks()
    assert [c async for c in late] == [] and late.closed


# -- compaction_indices -----------------------------------------------------------------------------------------


def test_compaction_indices_beside_turn_start_indices_and_after_trimming() -> None:
    made = conversation(max_history_size=6)
    made._on_note(note(upsert("u1", ["q1"], kind="user_message")))
    made._on_note(note(compaction("c1")))
    made._on_note(note(upsert("a1", ["r1"])))
    assert made.turn_start_indices == [0] and made.compaction_indices == [1]
    made._on_note(note(upsert("u2", ["q2"], kind="user_message")))
    made._on_note(
        note(update({"sessionUpdate": "compaction_summary_chunk", "compactionId": "c2", "content": text("s")}))
    )
    made._on_note(note(upsert("a2", ["r2"])))
    made._on_note(note(upsert("u3", ["q3"], kind="user_message")))
    made._on_note(note(compaction("c3", "in_progress")))
    history = made.history()
    # u1 c1 a1 u2 c2 a2 u3 c3: the newest six are kept (two trimmed), and the indices follow.
    assert [type(e).__name__ for e in history] == [
        "Message",
        "Message",
        "Compaction",
        "Message",
        "Message",
        "Compaction",
    ]
    assert made.compaction_indices == [2, 5] and made.turn_start_indices == [1, 4]
    assert all(isinstance(history[i], Compaction) for i in made.compaction_indices)
    made.clear_history()
    assert made.compaction_indices == [] and made.turn_start_indices == []


async def test_a_compaction_is_a_step_with_its_index() -> None:
    made = conversation()
    steps = made.receive_steps()
    made._on_note(note(upsert("u1", ["q"], kind="user_message")))
    made._on_note(note(compaction("c1", "in_progress")))
    made._on_note(note(compaction("c1")))
    got = await buffered(steps)
    assert [(type(s.event), s.index) for s in got[1:]] == [(CompactionChanged, 1), (CompactionChanged, 1)]
    assert made.compaction_indices == [1]


def test_events_carry_live_entities() -> None:
    """A Step's event points at the live entity, as fold events do (documented: read it when handling)."""
    made = conversation()
    steps = made.receive_steps()
    made._on_note(note(tool("t1", status="pending")))
    made._on_note(note(tool("t1", status="completed")))
    got = anyio.run(buffered, steps)
    assert [type(s.event) for s in got] == [ToolCallChanged, ToolCallChanged]
    assert got[0].entry is got[1].entry and got[0].event.tool_call.status == "completed"  # type: ignore[attr-defined]


async def test_dropped_text_is_counted_in_updates_whichever_path_folded_it() -> None:
    made = conversation()
    made._on_note(note(chunk("a", "start")))
    made._on_note(note(chunk("b", "other")))
    chunks = made.receive_chunks(max_buffer=1)
    made._on_note(note(tool("t1")))  # fills the buffer
    run_batch(made, [note(chunk("a", "x")), note(chunk("a", "y")), note(chunk("a", "z"))])  # one run of three
    made._on_note(note(chunk("b", "w")))  # one update on the per-note path
    assert chunks.dropped == 4
    assert [type(c).__name__ for c in await buffered(chunks)] == ["ToolCallChunk", "StreamOverflow"]
