"""The fold of Preview update shapes decoded the way the connection decodes v2 (``unstable.UpdateSessionNotification``):
plan variants (items, markdown, file, removed), usage on the idle state update, ``_meta`` of state and usage."""

from __future__ import annotations

import json
from typing import Any

from acp_session.codec import decoder
from acp_session.conversation import PlanChanged, SessionState, StateChanged
from acp_session.protocol.v2 import V2Protocol
from acp_session.schema import unstable as mu

DECODE = V2Protocol.routes[0].decode  # what the connection decodes session/update with


def fold(state: SessionState, update: dict[str, Any]) -> Any:
    note = DECODE(json.dumps({"sessionId": "s", "update": update}).encode())
    return state.apply_notification(note)


def test_the_connection_decodes_with_the_unstable_superset() -> None:
    # The route's decoder wraps the superset's (protocol/usage_quirk.py) and publishes its msgspec decoder, which
    # the connection's one-pass fast path uses: both decode the unstable schema's type.
    published = getattr(DECODE, "msgspec_decoder", None)
    assert published is not None and published is decoder(mu.UpdateSessionNotification).msgspec_decoder
    assert published.type is mu.UpdateSessionNotification


def test_plan_variants_fold_in_place() -> None:
    state = SessionState("s")
    items = {"type": "items", "planId": "p", "entries": [{"content": "a", "priority": "high", "status": "pending"}]}
    event = fold(state, {"sessionUpdate": "plan_update", "plan": items})
    assert isinstance(event, PlanChanged) and event.created and len(event.plan.entries) == 1
    event = fold(
        state, {"sessionUpdate": "plan_update", "plan": {"type": "markdown", "planId": "p", "content": "# Do"}}
    )
    plan = state.plans["p"]
    assert isinstance(event, PlanChanged) and not event.created and plan.markdown == "# Do" and plan.entries == []
    fold(state, {"sessionUpdate": "plan_update", "plan": {"type": "file", "planId": "q", "uri": "file:///plan.md"}})
    assert state.plans["q"].file_uri == "file:///plan.md" and state.plans["q"].markdown is None
    event = fold(state, {"sessionUpdate": "plan_removed", "planId": "p"})
    assert isinstance(event, PlanChanged) and event.removed and "p" not in state.plans
    assert [entry.plan_id for entry in state.timeline] == ["q"]  # type: ignore[union-attr]


def test_idle_usage_and_meta() -> None:
    state = SessionState("s")
    fold(state, {"sessionUpdate": "state_update", "state": "running"})
    usage = {"totalTokens": 9, "inputTokens": 6, "outputTokens": 3, "cachedWriteTokens": 1}
    idle = {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn", "usage": usage}
    event = fold(state, {**idle, "_meta": {"quota": {"left": 3}}})
    assert isinstance(event, StateChanged) and event.completed and event.meta == {"quota": {"left": 3}}
    assert event.turn_usage is not None and event.turn_usage.cached_write_tokens == 1
    assert state.state_meta == {"quota": {"left": 3}} and state.last_turn_usage == event.turn_usage
    repeated = fold(state, idle)  # a repeated idle snapshot adds no usage (ACP2-045)
    assert isinstance(repeated, StateChanged) and not repeated.completed and state.state_meta is None
    total = state.turn_usage_total
    assert total is not None and total.total_tokens == 9
    fold(state, {"sessionUpdate": "usage_update", "used": 5, "size": 10, "_meta": {"model": "m"}})
    assert state.usage is not None and state.usage.meta == {"model": "m"}
