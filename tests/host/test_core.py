"""The host's bookkeeping without I/O: the bounded, numbered update log; a permission request asked of several
clients, the first answer winning and the others to be withdrawn; a session's turn state and attached clients."""

from __future__ import annotations

import msgspec
import pytest

from acp_session.codec import decoder
from acp_session.host import HostSession, PermissionAsk, UpdateLog
from acp_session.schema.types import UpdateSessionNotification


def test_the_log_numbers_and_bounds_its_updates() -> None:
    log = UpdateLog(max_entries=3, max_bytes=1000)
    for n in range(1, 6):
        assert log.append(f"u{n}".encode()) == n
    assert len(log) == 3 and log.dropped == 2 and log.first_seq == 3
    assert [seq for seq, _ in log.after(0)] == [3, 4, 5]  # what was dropped is skipped
    assert log.after(4) == [(5, b"u5")] and log.after(5) == []
    assert [seq for seq, _ in log.after(2, limit=2)] == [3, 4]
    small = UpdateLog(max_entries=100, max_bytes=10)
    for _ in range(5):
        small.append(b"12345")
    assert small.size <= 10 and len(small) == 2
    with pytest.raises(ValueError):
        small.append(b"x", seq=1)


def test_the_first_answer_wins_and_the_others_are_withdrawn() -> None:
    ask: PermissionAsk[str] = PermissionAsk(request="req")
    ask.ask("a", "handle-a")
    ask.ask("b", "handle-b")
    ask.ask("c", "handle-c")
    ask.forget("c")  # went away
    assert ask.settle("b", "allow") == ["handle-a"]
    assert ask.answered_by == "b" and ask.answer == "allow"
    assert ask.settle("a", "reject") is None  # too late: changes nothing
    assert ask.answer == "allow"
    with pytest.raises(RuntimeError):
        ask.ask("d", "handle-d")


def test_a_session_follows_its_turn_state_and_asks_new_clients() -> None:
    session = HostSession("s", "/w", "agent")
    decode = decoder(UpdateSessionNotification)
    for update in (
        {"sessionUpdate": "state_update", "state": "running"},
        {"sessionUpdate": "state_update", "state": "requires_action"},
    ):
        raw = msgspec.json.encode({"sessionId": "s", "update": update})
        session.record(raw, decode(raw).update)
    assert session.state == "requires_action"
    ask: PermissionAsk[str] = PermissionAsk(request="req")
    session.waiting(ask)
    assert session.attach("a") == [ask]
    ask.ask("a", "handle-a")
    assert session.attach("b") == [ask]  # asked of each client that attaches while it waits
    assert session.detach("a") and not ask.asked("a")
    raw = msgspec.json.encode(
        {"sessionId": "s", "update": {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}}
    )
    session.record(raw, decode(raw).update)
    assert (session.state, session.stop_reason, session.log.last_seq) == ("idle", "end_turn", 3)
    session.live = False
    session.resumable = False
    assert "read-only" in (session.read_only_reason() or "")


def test_subagent_updates_are_marked_and_fed_only_to_clients_that_asked() -> None:
    """A child's own update and the parent's about its children are kept in order, marked; a client that did not
    ask skips them and still moves past them (its cursor); they leave the parent's turn state alone."""
    session = HostSession("s", "/w", "agent")
    note = decoder(UpdateSessionNotification)
    parent_running = b'{"sessionId":"s","update":{"sessionUpdate":"state_update","state":"running"}}'
    announce = b'{"sessionId":"s","update":{"sessionUpdate":"subagent_update","sessionId":"c"}}'
    child_idle = b'{"sessionId":"c","update":{"sessionUpdate":"state_update","state":"idle"}}'
    session.record(parent_running, note(parent_running).update)
    session.record(announce, note(announce).update)  # the kind marks it
    session.record(child_idle, note(child_idle).update, subagent=True)
    assert session.state == "running"  # the child's idle is not the parent's
    everything, last = session.log.feed(0, 10, subagents=True)
    assert [seq for seq, _ in everything] == [1, 2, 3] and last == 3
    plain, last = session.log.feed(0, 10, subagents=False)
    assert plain == [(1, parent_running)] and last == 3
    assert session.log.feed(1, 1, subagents=False) == ([], 2)  # only skipped ones looked at: the cursor moves
    assert session.log.feed(3, 10, subagents=False) == ([], 3)
