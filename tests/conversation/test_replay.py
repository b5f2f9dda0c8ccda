"""Resume with history replay: folding the replay onto the live state changes nothing."""

from __future__ import annotations

import base64
from typing import Any

from acp_session import codec
from acp_session.conversation import Message, ReplayCompleted, SessionState, UnknownEntry, UnknownUpdate
from acp_session.schema import ResumeSessionResponse

from .wire import chunk, fold, state, text, tool, tool_chunk, unstable_update, update, upsert

RESUMED = codec.convert({}, ResumeSessionResponse)


def replay(session: SessionState, updates: list[Any]) -> SessionState:
    session.begin_resume(replay=True)
    for item in updates:
        session.apply(item)
    session.apply_resume_response(RESUMED)
    return session


def history() -> list[Any]:
    out = base64.b64encode(b"ok\n").decode()
    return [
        state("running"),
        chunk("u1", "Fix the ", kind="user_message"),
        chunk("u1", "bug", kind="user_message"),
        chunk("th1", "Look at main.py", kind="agent_thought"),
        tool("t1", title="Read", kind="read", status="in_progress", _meta={"a": 1}),
        tool_chunk("t1", {"type": "content", "content": text("line 1")}),
        update({"sessionUpdate": "terminal_output_chunk", "terminalId": "term", "data": out}),
        update({"sessionUpdate": "_vendor_marker", "n": 1}),
        tool("t1", status="completed", _meta={"b": 2}),
        chunk("a1", "Done"),
        chunk("a1", "."),
        update({"sessionUpdate": "compaction_summary_chunk", "compactionId": "c", "content": text("S")}),
        update({"sessionUpdate": "_vendor_marker", "n": 1}),
        state("idle", stopReason="end_turn"),
    ]


def test_replay_onto_live_state_is_identical() -> None:
    live = fold(history())
    before = live.to_snapshot()
    replay(live, [*history(), state("idle", stopReason="end_turn")])
    assert live.to_snapshot() == before
    assert live.completions == 1
    assert live.message("a1").text == "Done."  # type: ignore[union-attr]
    assert live.terminals["term"].output_bytes == b"ok\n"


def test_replay_twice_is_still_identical() -> None:
    live = fold(history())
    twice = replay(replay(fold(history()), history()), history())
    assert twice == live


def test_replay_onto_fresh_state_rebuilds_the_history_without_counting_completions() -> None:
    live = fold(history())
    fresh = replay(SessionState(), history())
    expected = live.to_snapshot()
    got = fresh.to_snapshot()
    assert got.pop("completions") == 0 and expected.pop("completions") == 1
    assert got == expected


def test_replayed_unknown_updates_are_matched_not_duplicated() -> None:
    live = fold(history())
    live.begin_resume(replay=True)
    events = [live.apply(item) for item in history()]
    live.apply_resume_response(RESUMED)
    unknown_events = [event for event in events if isinstance(event, UnknownUpdate)]
    assert [event.created for event in unknown_events] == [False, False]
    assert len([entry for entry in live.timeline if isinstance(entry, UnknownEntry)]) == 2


def test_replay_onto_late_joined_state_slots_earlier_entities_in_order() -> None:
    """A client that only saw the second exchange gets the first one placed before it."""
    first = [upsert("u1", ["q1"], kind="user_message"), upsert("a1", ["r1"])]
    second = [upsert("u2", ["q2"], kind="user_message"), chunk("a2", "r"), chunk("a2", "2")]
    full = fold([*first, *second])
    late = replay(fold(second), [*first, *second])
    assert late == full
    assert [(entry.message_id, entry.position) for entry in late.timeline if isinstance(entry, Message)] == [
        ("u1", 0),
        ("a1", 1),
        ("u2", 2),
        ("a2", 3),
    ]


def test_resume_without_replay_keeps_appending() -> None:
    """Without replay, updates during resume are live: a chunk still appends to existing content."""
    session = fold([chunk("a1", "Hel")])
    session.begin_resume(replay=False)
    session.apply(chunk("a1", "lo"))
    session.apply_resume_response(RESUMED)
    assert session.message("a1").text == "Hello"  # type: ignore[union-attr]


def test_replay_ends_with_the_response() -> None:
    session = replay(fold([chunk("a1", "x")]), [chunk("a1", "x")])
    session.apply(chunk("a1", "y"))
    assert session.message("a1").text == "xy" and not session.resuming  # type: ignore[union-attr]


def test_removed_and_recreated_plan_keeps_its_place_after_replayed_entries() -> None:
    """A plan removed and re-created live sits after the message replayed before its removal (hypothesis case)."""
    plan = {"sessionUpdate": "plan_update", "plan": {"type": "markdown", "planId": "a", "content": ""}}
    updates = [
        unstable_update(plan),
        chunk("a", "", kind="user_message"),
        unstable_update({"sessionUpdate": "plan_removed", "planId": "a"}),
        unstable_update(plan),
    ]
    live = fold(updates)
    assert replay(fold(updates), updates) == live
    assert [type(entry).__name__ for entry in live.timeline] == ["Message", "Plan"]


def bounded_replay(session: SessionState, updates: list[Any], limit: int) -> list[int]:
    """A replay folded as a ``Conversation`` folds it: each created entity may trim the history to ``limit`` (in
    batches of ``limit // 8``); the timeline's length after each update."""
    session.begin_resume(replay=True)
    lengths = []
    for item in updates:
        if getattr(session.apply(item), "created", False) and len(session.timeline) - limit > limit // 8:
            session.drop_oldest(len(session.timeline) - limit)
        lengths.append(len(session.timeline))
    session.apply_resume_response(RESUMED)
    return lengths


def test_the_history_bound_holds_inside_a_replay() -> None:
    """Issue 51, 7: trimming inside a replay drops the oldest of the timeline the replay builds (its own order
    first), so a replay of 400 messages onto a state bounded to 40 never holds more than the bound and its slack,
    and ends as the live fold of the same history, trimmed: the newest 40, the live entities rebuilt in place."""
    history = [upsert(f"m{i}", [f"text {i}"]) for i in range(400)]
    live = fold(history)
    live.drop_oldest(360)
    kept = list(live.timeline)
    lengths = bounded_replay(live, history + history[-5:], 40)  # the last five replayed twice: merged by id
    assert max(lengths) <= 40 + 40 // 8
    assert [m.message_id for m in live.timeline if isinstance(m, Message)][-40:] == [f"m{i}" for i in range(360, 400)]
    assert all(a is b for a, b in zip(live.timeline[-40:], kept, strict=True))  # the same entities, rebuilt
    assert [m.text for m in live.timeline[-40:] if isinstance(m, Message)] == [f"text {i}" for i in range(360, 400)]


def test_replay_complete_ends_the_replay_before_the_answer() -> None:
    """The v2 RFD's ``replay_complete`` (an unknown variant in the pinned schema): the replay ends there, in
    replay order and, with ``drop_unreplayed``, without what it never mentioned; updates after it are live (a
    chunk appends to the rebuilt message, it does not rebuild it again). It is never kept in history."""
    session = fold([upsert("a", ["old a"]), upsert("gone", ["lost"]), upsert("b", ["old b"])])
    session.begin_resume(replay=True, drop_unreplayed=True)
    for item in [upsert("b", ["new b"]), upsert("a", ["new a"])]:
        session.apply(item)
    assert session.replaying
    event = session.apply(update({"sessionUpdate": "replay_complete"}))
    assert isinstance(event, ReplayCompleted) and event.ended
    assert not session.replaying and session.resuming  # the window stays open for the answer's lists
    assert [m.message_id for m in session.timeline if isinstance(m, Message)] == ["b", "a"]
    session.apply(chunk("a", " and more"))
    session.apply_resume_response(RESUMED)
    assert session.message("a").text == "new a and more"  # type: ignore[union-attr]
    assert not any(isinstance(e, UnknownEntry) for e in session.timeline)


def test_replay_complete_outside_a_replay_changes_nothing() -> None:
    session = fold([upsert("a", ["x"])])
    event = session.apply(update({"sessionUpdate": "replay_complete", "_meta": {"n": 1}}))
    assert isinstance(event, ReplayCompleted) and not event.ended
    assert [type(e) for e in session.timeline] == [Message]
