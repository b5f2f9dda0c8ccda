"""The host's bookkeeping without I/O: the bounded, numbered update log; a permission request asked of several
clients, the first answer winning and the others to be withdrawn; a session's turn state and attached clients."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


def _feed_entry_by_entry(log: UpdateLog, seq: int, limit: int, subagents: bool) -> tuple[list[tuple[int, bytes]], int]:
    """``UpdateLog.feed`` as it was written first, entry by entry: the reference the one-pass feed must match."""
    entries = list(log._entries)
    out: list[tuple[int, bytes]] = []
    if not entries or seq >= log.last_seq:
        return out, seq
    start = max(0, seq + 1 - entries[0][0])
    last = seq
    for index in range(start, min(start + limit, len(entries))):
        number, params, subagent = entries[index]
        last = number
        if subagents or not subagent:
            out.append((number, params))
    return out, last


RUNS = st.lists(
    st.one_of(
        st.lists(st.binary(min_size=0, max_size=12), min_size=1, max_size=8).map(lambda run: ("run", run)),
        st.binary(max_size=12).map(lambda one: ("subagent", [one])),
    ),
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(RUNS, st.integers(1, 6), st.integers(1, 40), st.integers(0, 40), st.integers(1, 10), st.booleans())
def test_a_run_is_logged_as_its_updates_one_by_one_and_fed_alike(
    runs: list[tuple[str, list[bytes]]],
    max_entries: int,
    max_bytes: int,
    cursor: int,
    limit: int,
    subagents: bool,
) -> None:
    one, many = UpdateLog(max_entries, max_bytes), UpdateLog(max_entries, max_bytes)
    for kind, params in runs:
        if kind == "subagent":
            one.add(params[0], True)
            many.add(params[0], True)
            continue
        for item in params:
            one.add(item, False)
        many.add_run(params)
    assert list(many._entries) == list(one._entries)
    assert (many.last_seq, many.dropped, many.size) == (one.last_seq, one.dropped, one.size)
    assert many.feed(cursor, limit, subagents=subagents) == _feed_entry_by_entry(one, cursor, limit, subagents)
