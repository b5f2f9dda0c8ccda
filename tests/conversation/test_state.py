"""state_update: foreground state, stop reason, background, completions and per-work usage."""

from __future__ import annotations

from acp_session.conversation import SessionState, StateChanged, TokenUsage
from acp_session.schema import BackgroundTerminal, UnknownBackgroundWork

from .wire import fold, state, unstable_update


def completion_flags(session: SessionState, updates: list[object]) -> list[bool]:
    flags = []
    for item in updates:
        event = session.apply(item)
        assert isinstance(event, StateChanged)
        flags.append(event.completed)
    return flags


def test_new_session_defaults_to_idle_unreported() -> None:
    session = SessionState()
    assert session.state == "idle" and session.is_idle and not session.state_reported
    assert session.background is None and session.stop_reason is None and session.completions == 0


def test_running_then_idle_is_one_completion_with_stop_reason() -> None:
    session = SessionState()
    assert completion_flags(session, [state("running"), state("idle", stopReason="end_turn")]) == [False, True]
    assert session.stop_reason == "end_turn" and session.completions == 1 and session.state_reported


def test_acp2_045_repeated_idle_is_not_a_new_completion() -> None:
    """ACP2-045: repeated idle snapshots (even with a stop reason) add no completion or cancellation."""
    session = SessionState()
    flags = completion_flags(
        session,
        [
            state("running"),
            state("idle", stopReason="cancelled"),
            state("idle", stopReason="cancelled"),
            state("idle", stopReason="end_turn", background=[]),
        ],
    )
    assert flags == [False, True, False, False]
    assert session.completions == 1
    assert session.stop_reason == "end_turn"  # a repeated snapshot may still carry context


def test_idle_from_the_default_state_is_not_a_completion() -> None:
    session = SessionState()
    assert completion_flags(session, [state("idle", stopReason="end_turn")]) == [False]
    assert session.completions == 0


def test_acp2_044_idle_without_stop_reason() -> None:
    """ACP2-044 (agent SHOULD): the client copes with an omitted, null or malformed stop reason."""
    for reason in (None, 42, {"x": 1}):
        session = fold([state("running")])
        fields = {} if reason is None else {"stopReason": reason}
        event = session.apply(state("idle", **fields))
        assert isinstance(event, StateChanged) and event.completed and event.stop_reason is None
    session = fold([state("running"), state("idle", stopReason=None)])
    assert session.stop_reason is None and session.completions == 1


def test_error_stop_reason_carries_the_error_and_unknown_reasons_are_kept() -> None:
    session = fold([state("running"), state("idle", stopReason="error", error={"code": -32603, "message": "boom"})])
    assert session.stop_reason == "error" and session.error is not None and session.error.message == "boom"
    session.apply(state("running"))
    assert session.error is None and session.stop_reason is None
    session.apply(state("idle", stopReason="_quota"))
    assert session.stop_reason == "_quota" and session.completions == 2


def test_background_omitted_or_null_is_unknown_and_empty_is_none() -> None:
    session = fold([state("running", background=[{"type": "terminal", "terminalId": "t1"}])])
    assert session.background == [BackgroundTerminal(terminal_id="t1")]
    session.apply(state("running"))
    assert session.background is None
    session.apply(state("idle", background=[]))
    assert session.background == []
    session.apply(state("idle", background=None))
    assert session.background is None
    session.apply(state("idle", background="malformed"))
    assert session.background is None


def test_background_snapshot_replaces_and_keeps_unknown_items() -> None:
    """An unknown background item still means work is running (kept raw, listed)."""
    session = fold(
        [
            state("idle", background=[{"type": "tool_call", "toolCallId": "a"}, {"type": "_cron", "id": 1}]),
            state("idle", background=[{"type": "_cron", "id": 1}]),
        ]
    )
    assert session.background is not None and len(session.background) == 1
    assert isinstance(session.background[0], UnknownBackgroundWork)


def test_acp2_058_unrecognized_state_is_busy_not_idle() -> None:
    """ACP2-058: an unknown state is not idle, does not keep showing the previous state, reads as busy."""
    session = fold([state("running")])
    event = session.apply(state("_compacting"))
    assert isinstance(event, StateChanged) and not event.completed
    assert session.state == "_compacting" and session.display_state == "busy" and not session.is_idle
    session.apply(state("future_state"))
    assert session.display_state == "busy" and session.completions == 0
    session.apply(state("idle", stopReason="end_turn"))
    assert session.display_state == "idle" and session.completions == 1


def test_acp2_058_unknown_state_from_idle_also_shows_busy() -> None:
    """ACP2-058: from idle, a future state must not be presented as the confirmed idle."""
    session = fold([state("idle"), state("_weird")])
    assert not session.is_idle and session.display_state == "busy"


def test_unstable_unknown_state_shows_busy() -> None:
    session = fold([state("running"), unstable_update({"sessionUpdate": "state_update", "state": "unknown"})])
    assert session.state == "unknown" and session.display_state == "busy" and not session.is_idle


def test_acp2_053_requires_action_holds_until_running_or_idle() -> None:
    """ACP2-053 / ACP2-023: requires_action stays until a running or idle snapshot arrives."""
    session = fold([state("running"), state("requires_action")])
    assert session.display_state == "requires_action" and not session.is_idle
    session.apply(state("requires_action", background=[]))
    assert session.display_state == "requires_action"
    session.apply(state("running"))
    assert session.display_state == "running"
    session.apply(state("requires_action"))
    completed = session.apply(state("idle", stopReason="cancelled"))
    assert isinstance(completed, StateChanged) and completed.completed and session.completions == 1


def test_repeated_running_snapshot_updates_information_only() -> None:
    session = fold([state("running", background=[])])
    event = session.apply(state("running", background=[{"type": "terminal", "terminalId": "x"}]))
    assert isinstance(event, StateChanged) and event.repeated and not event.completed
    assert session.background == [BackgroundTerminal(terminal_id="x")]


def idle_with_usage(total: int, thought: int | None = None, reason: str = "end_turn") -> object:
    usage: dict[str, int] = {"totalTokens": total, "inputTokens": total - 1, "outputTokens": 1}
    if thought is not None:
        usage["thoughtTokens"] = thought
    return unstable_update({"sessionUpdate": "state_update", "state": "idle", "stopReason": reason, "usage": usage})


def test_acp2_045_turn_usage_summed_over_new_completions_only() -> None:
    """ACP2-045: per-work usage (unstable) is summed once per completion, never for repeated idles."""
    session = SessionState()
    events = [session.apply(item) for item in [state("running"), idle_with_usage(10), idle_with_usage(10)]]
    assert session.turn_usage_total == TokenUsage(total_tokens=10, input_tokens=9, output_tokens=1)
    assert isinstance(events[1], StateChanged) and events[1].turn_usage == session.last_turn_usage
    assert isinstance(events[2], StateChanged) and events[2].turn_usage is None
    session.apply(state("running"))
    session.apply(idle_with_usage(5, thought=2))
    assert session.turn_usage_total == TokenUsage(total_tokens=15, input_tokens=13, output_tokens=2, thought_tokens=2)
    assert session.last_turn_usage == TokenUsage(total_tokens=5, input_tokens=4, output_tokens=1, thought_tokens=2)
    assert session.completions == 2


def test_stable_state_updates_report_no_turn_usage() -> None:
    session = fold([state("running"), state("idle", stopReason="end_turn")])
    assert session.turn_usage_total is None and session.last_turn_usage is None


def test_usage_on_a_non_completion_is_ignored() -> None:
    session = fold([idle_with_usage(7)])  # idle -> idle: not a completion
    assert session.turn_usage_total is None
