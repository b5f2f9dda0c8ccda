"""What the streams missed while the connection was down (``acp_session.conversation.catch_up``), sans-IO: the
live fold up to the drop, the snapshot, a reconnect's replay (the agent's whole history), then ``missed``: one event
per entity created or changed since, what the streams had is never repeated, and what the agent lost is counted.
The end-to-end tests (a real cut between the client and a real agent) are tests/remote_server/test_reconnect_streams.py
and tests/remote/test_ts_reconnect_streams.py."""

from __future__ import annotations

from typing import Any

import pytest

from acp_session import Conversation, codec
from acp_session.conversation import (
    CommandsChanged,
    MessageChanged,
    PlanChanged,
    SessionState,
    StateChanged,
    StreamReconnected,
    TextChunk,
    ThoughtChunk,
    ToolCallChanged,
    ToolCallChunk,
)
from acp_session.conversation.catch_up import Seen, missed
from acp_session.schema import ResumeSessionResponse, UpdateSessionNotification

from .test_streams import buffered
from .wire import chunk, fold, state, tool, unstable_update, update, upsert

pytestmark = pytest.mark.anyio

COMMAND = {"type": "command", "name": "web", "description": "Search"}


def plan(status: str = "pending") -> Any:
    items = {"type": "items", "planId": "p", "entries": [{"content": "Read", "priority": "high", "status": status}]}
    return unstable_update({"sessionUpdate": "plan_update", "plan": items})


def reconnect(session: SessionState, replayed: list[Any], **answer: Any) -> None:
    """A reconnect's resume: the replay folded in its window, closed with the agent's history as the whole truth."""
    session.begin_resume(replay=True)
    for item in replayed:
        session.apply(item)
    session.apply_resume_response(codec.convert(answer, ResumeSessionResponse), drop_unreplayed=True)


def at_drop() -> list[Any]:
    return [
        update({"sessionUpdate": "available_commands_update", "availableCommands": [COMMAND]}),
        state("running"),
        chunk("u1", "do it", kind="user_message"),
        plan(),
        tool("t1", title="Read", status="in_progress"),
        tool("t2", title="List", status="completed"),
        chunk("a1", "Half "),
        chunk("th1", "Thinking", kind="agent_thought"),
    ]


def test_only_what_changed_while_away_is_reported_once_in_history_order() -> None:
    session = fold(at_drop())
    seen = Seen.take(session)
    reconnect(
        session,
        [
            update({"sessionUpdate": "available_commands_update", "availableCommands": [COMMAND]}),  # the same
            chunk("u1", "do it", kind="user_message"),
            plan(),  # unchanged
            tool("t1", title="Read", status="completed"),  # finished while away
            tool("t2", title="List", status="completed"),  # unchanged
            chunk("a1", "Half "),
            chunk("a1", "done."),  # grew while away
            upsert("th1", ["Rethought"], kind="agent_thought"),  # rewritten while away
            tool("t3", title="Write", status="completed"),  # new
            chunk("a2", "Bye."),  # new
            state("idle", stopReason="end_turn"),
        ],
        availableCommands=[COMMAND],  # the resume's answer repeats the list: not news
    )
    events, forgotten = missed(seen, session)
    assert forgotten == 0
    assert [type(e) for e in events] == [
        ToolCallChanged,
        MessageChanged,
        MessageChanged,
        ToolCallChanged,
        MessageChanged,
        StateChanged,
    ]
    t1, a1, th1, t3, a2, idle = events
    assert isinstance(t1, ToolCallChanged) and t1.tool_call.tool_call_id == "t1" and not t1.created
    assert isinstance(a1, MessageChanged) and not a1.created and a1.appended is not None
    assert getattr(a1.appended, "text", None) == "done."  # only the missed text
    assert isinstance(th1, MessageChanged) and th1.appended is None and th1.message.text == "Rethought"
    assert isinstance(t3, ToolCallChanged) and t3.created
    assert isinstance(a2, MessageChanged) and a2.created and getattr(a2.appended, "text", None) == "Bye."
    assert isinstance(idle, StateChanged)
    assert (idle.state, idle.previous, idle.stop_reason, idle.completed) == ("idle", "running", "end_turn", True)


def test_nothing_changed_means_nothing_is_reported() -> None:
    session = fold(at_drop())
    seen = Seen.take(session)
    reconnect(session, at_drop(), availableCommands=[COMMAND])
    assert missed(seen, session) == ([], 0)


def test_what_the_agent_lost_is_counted_and_new_lists_are_reported() -> None:
    session = fold(at_drop())
    seen = Seen.take(session)
    # A restarted agent that kept only the user's message: the plan, the tools and the replies are gone.
    other = {"type": "command", "name": "fix", "description": "Fix"}
    reconnect(session, [chunk("u1", "do it", kind="user_message"), state("idle")], availableCommands=[other])
    events, forgotten = missed(seen, session)
    assert forgotten == 5
    assert [type(e) for e in events] == [CommandsChanged, StateChanged]
    assert [c.name for c in session.available_commands] == ["fix"]  # type: ignore[union-attr]


def test_history_trimmed_before_the_drop_and_replayed_again_is_not_news() -> None:
    session = fold([chunk("old1", "first"), chunk("old2", "second"), chunk("a1", "kept")])
    session.drop_oldest(2)  # max_history_size: the stream was shown them, long ago
    seen = Seen.take(session)
    everything = [chunk("old1", "first"), chunk("old2", "second"), chunk("a1", "kept"), chunk("a2", "new")]
    reconnect(session, everything)
    events, forgotten = missed(seen, session)
    assert forgotten == 0 and [e.message.message_id for e in events] == ["a2"]  # type: ignore[attr-defined]


def test_a_plan_changed_while_away_is_one_event() -> None:
    session = fold(at_drop())
    seen = Seen.take(session)
    reconnect(session, [*at_drop()[:3], plan("completed"), *at_drop()[4:]], availableCommands=[COMMAND])
    events, forgotten = missed(seen, session)
    assert forgotten == 0 and [type(e) for e in events] == [PlanChanged]
    assert not events[0].created  # type: ignore[attr-defined]


async def test_the_streams_get_the_marker_then_the_missed_items_replayed_then_the_live_ones() -> None:
    """What ``Conversation`` hands the open streams after a reconnect (``_Hub.caught_up``): chunks too, each
    marked, a live fragment of the same message never merged into a caught-up one."""
    made = Conversation(max_history_size=0)
    made.state.session_id = "s1"
    steps, chunks = made.receive_steps(), made.receive_chunks()
    for item in at_drop():
        made._on_note(UpdateSessionNotification(session_id="s1", update=item))
    seen = Seen.take(made.state)
    grown = [*at_drop()[2:6], chunk("a1", "Half "), chunk("a1", "done. ")]
    reconnect(made.state, [*grown, upsert("th1", ["Rethought"], kind="agent_thought"), tool("t3", title="Write")])
    events, forgotten = missed(seen, made.state)
    assert made._streams is not None
    made._streams.caught_up(StreamReconnected(2, forgotten), events)
    made._on_note(UpdateSessionNotification(session_id="s1", update=chunk("a1", "More.")))  # live again
    got = await buffered(chunks)
    calls = made.state.tool_calls
    assert got == [
        ToolCallChunk(calls["t1"], 2),
        ToolCallChunk(calls["t2"], 3),
        TextChunk("Half ", "a1", 4),
        ThoughtChunk("Thinking", "th1", 5),
        StreamReconnected(2, 0),
        TextChunk("done. ", "a1", 4, replayed=True),
        ThoughtChunk("Rethought", "th1", 5, replaced=True, replayed=True),
        ToolCallChunk(calls["t3"], 6, replayed=True),
        TextChunk("More.", "a1", 4),
    ]
    step_items = await buffered(steps)
    marker = step_items.index(StreamReconnected(2, 0))
    assert all(not s.replayed for s in step_items[:marker])
    after = step_items[marker + 1 :]
    assert [(type(s.event), s.replayed) for s in after] == [
        (MessageChanged, True),
        (MessageChanged, True),
        (ToolCallChanged, True),
        (MessageChanged, False),
    ]
