"""The host takes the agent's updates a run at a time (``Host._on_updates``, the client's ``BatchUpdateListener``):
whatever the run holds (chunks, tool calls, turn states, titles, several sessions, a session the host does not
keep), the logs, the sessions' turn state and title, the host's events and the feeds' wake-ups come out as when
``Host._on_update`` takes each update alone."""

from __future__ import annotations

import json
from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_session.codec import decoder
from acp_session.host import HostOptions
from acp_session.host.host import Host
from acp_session.schema import unstable as mu

_note = decoder(mu.UpdateSessionNotification)

UPDATES: list[dict[str, Any]] = [
    {"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": {"type": "text", "text": "x"}},
    {"sessionUpdate": "agent_thought_chunk", "messageId": "t", "content": {"type": "text", "text": "y" * 9}},
    {"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "look", "status": "pending"},
    {"sessionUpdate": "state_update", "state": "running"},
    {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"},
    {"sessionUpdate": "session_info_update", "title": "named"},
]
NOTES = st.lists(st.tuples(st.sampled_from(["s1", "s2", "elsewhere"]), st.sampled_from(range(len(UPDATES)))))


def host_with_sessions(max_entries: int) -> tuple[Host, list[Any]]:
    events: list[Any] = []
    host = Host(HostOptions(agent=["agent"], max_log_entries=max_entries, max_log_bytes=400), on_event=events.append)
    for session_id in ("s1", "s2"):
        host._make(session_id, "/", 2)
    return host, events


def outcome(host: Host, events: list[Any]) -> Any:
    sessions = {
        sid: (list(s.log._entries), s.log.dropped, s.log.last_seq, s.state, s.stop_reason, s.title)
        for sid, s in host.sessions.items()
    }
    return sessions, [(event.kind, event.session_id, event.detail) for event in events]


@settings(max_examples=200, deadline=None)
@given(st.lists(NOTES, max_size=6), st.integers(1, 30))
def test_a_run_is_taken_as_its_updates_one_by_one(runs: list[list[tuple[str, int]]], max_entries: int) -> None:
    one, one_events = host_with_sessions(max_entries)
    many, many_events = host_with_sessions(max_entries)
    waits = {name: (one.changed(name), many.changed(name)) for name in ("s1", "s2")}
    for run in runs:
        notes = [_note(json.dumps({"sessionId": sid, "update": UPDATES[index]}).encode()) for sid, index in run]
        for note in notes:
            one._on_update(note)
        if notes:
            many._on_updates(notes)
    assert outcome(many, many_events) == outcome(one, one_events)
    for first, second in waits.values():
        assert first.is_set() == second.is_set()  # a feed waiting on the session wakes alike
    assert all(msgspec.json.decode(params) for s in many.sessions.values() for _, params, _ in s.log._entries)
