"""Cancellation (v1): ``session/cancel`` of a running turn (its answer, and no update after it) and of a pending
permission request."""

from __future__ import annotations

from acp_session.schema import v1

from ...outcomes import NotApplicable
from ...registry import CheckContext, require
from ..common import scenario_turn_start, wait_permission
from .base import V1, response_or_fail, stop_reason_of

__all__ = ["cancel_permission", "cancel_turn", "cancel_updates_first"]


@V1(
    "cancel-turn",
    "session/cancel ends the running turn: the prompt is answered with stopReason cancelled, not an error",
    "cancellation",
    ("prompt-turn.mdx#cancellation", "ACP1-017", "ACP1-027"),
    scenarios=("long_turn",),
)
async def cancel_turn(ctx: CheckContext) -> str | None:
    p = ctx.probe
    scenario = ctx.scenario("long_turn")
    sid = await p.new_session(ctx.cwd)
    start, rid = await scenario_turn_start(ctx, scenario, sid)
    await p.notify("session/cancel", v1.CancelNotification(session_id=sid))
    answer = await response_or_fail(p, rid, start, ctx.wait, "prompt-turn.mdx#cancellation", "the cancelled prompt")
    require(
        answer.error is None, "ACP1-017", f"the cancelled prompt failed instead of ending cancelled: {answer.error}"
    )
    reason = stop_reason_of(answer)
    require(
        reason == "cancelled",
        "ACP1-017",
        f"after session/cancel the prompt ended with {reason!r} (if the {scenario.name} turn simply ended before "
        "the cancel arrived, give it a longer prompt)",
    )
    return None


@V1(
    "cancel-updates-first",
    "a cancelled turn's updates all arrive before its prompt is answered, none after",
    "cancellation",
    ("prompt-turn.mdx#cancellation", "ACP1-027"),
    scenarios=("long_turn",),
)
async def cancel_updates_first(ctx: CheckContext) -> str | None:
    p = ctx.probe
    scenario = ctx.scenario("long_turn")
    sid = await p.new_session(ctx.cwd)
    start, rid = await scenario_turn_start(ctx, scenario, sid)
    await p.notify("session/cancel", v1.CancelNotification(session_id=sid))
    answer = await p.response(rid, ctx.wait, start)
    if answer is None:
        raise NotApplicable(f"the cancelled prompt was not answered within {ctx.wait:g}s (cancel-turn judges that)")
    await p.barrier()
    late = p.find(p.is_update(sid), answer.index)
    require(
        not late,
        "prompt-turn.mdx#cancellation",
        f"{late[0].update_kind() if late else ''} sent after the cancelled prompt was answered (line "
        f"{late[0].index + 1 if late else 0})",
    )
    return None


@V1(
    "cancel-permission",
    "session/cancel during a permission request (answered cancelled) ends the turn with stopReason cancelled",
    "cancellation",
    ("prompt-turn.mdx#cancellation", "ACP1-017", "ACP1-027"),
    scenarios=("permission",),
)
async def cancel_permission(ctx: CheckContext) -> str | None:
    p = ctx.probe
    scenario = ctx.scenario("permission")
    sid = await p.new_session(ctx.cwd)
    start, rid, ask = await wait_permission(ctx, scenario, sid)
    assert ask.message is not None
    await p.notify("session/cancel", v1.CancelNotification(session_id=sid))
    # The client's part (ACP1-025): answer every pending permission request with the cancelled outcome.
    await p.respond(ask.message["id"], v1.RequestPermissionResponse(outcome=v1.Cancelled()))
    p.auto_answer_permissions = True
    answer = await response_or_fail(p, rid, start, ctx.wait, "prompt-turn.mdx#cancellation", "the cancelled prompt")
    require(
        answer.error is None, "ACP1-017", f"the cancelled prompt failed instead of ending cancelled: {answer.error}"
    )
    reason = stop_reason_of(answer)
    require(reason == "cancelled", "ACP1-017", f"after session/cancel the prompt ended with {reason!r}")
    return None
