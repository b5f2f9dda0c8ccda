"""Cancellation (v2): ``session/cancel`` of a running turn (its idle update and stop reason, nothing after it, no
answer to the notification, ``_meta`` on it), of a pending permission request and of prompts held while the
session is busy, and ``$/cancel_request``.

The first six share one observation, a ``long_turn`` turn cancelled at its first output, and each judges one
thing about it, so an agent that gets one thing wrong fails that check alone.
"""

from __future__ import annotations

from acp_session.schema.types import (
    CancelledPermissionOutcome,
    CancelRequestNotification,
    CancelSessionNotification,
    ListSessionsRequest,
    RequestPermissionResponse,
)

from ...frames import OUTPUT_KINDS
from ...outcomes import NotApplicable
from ...registry import CheckContext, require
from ..common import permission_tool_call, scenario_turn_start, texts, tool_call_completed, wait_permission
from .base import KNOWN_STOP_REASONS, V2, cancelled_turn, idle_after_cancel, second_prompt

__all__ = [
    "cancel_held_prompts",
    "cancel_not_error",
    "cancel_nothing_after",
    "cancel_permission",
    "cancel_request_ignored",
    "cancel_stop_reason",
    "cancel_turn",
    "cancel_unanswered",
    "cancel_with_meta",
    "held_prompt_cancel_request",
]


@V2(
    "cancel-turn",
    "session/cancel ends the running turn with an idle update carrying stopReason cancelled",
    "cancellation",
    ("ACP2-093", "ACP2-046"),
    scenarios=("long_turn",),
)
async def cancel_turn(ctx: CheckContext) -> str | None:
    cancelled = await cancelled_turn(ctx)
    require(
        cancelled.idle is not None,
        "ACP2-093",
        f"no idle state_update within {ctx.wait:g}s after session/cancel",
    )
    require(
        cancelled.stop_reason == "cancelled",
        "ACP2-046",
        f"the idle update after session/cancel has stopReason {cancelled.stop_reason!r} (if the long_turn turn "
        "simply ended before the cancel arrived, give it a longer prompt)",
    )
    return None


@V2(
    "cancel-nothing-after",
    "nothing of the cancelled turn (output, another state) comes after its idle update",
    "cancellation",
    ("ACP2-096", "ACP2-093"),
    scenarios=("long_turn",),
)
async def cancel_nothing_after(ctx: CheckContext) -> str | None:
    p = ctx.probe
    cancelled = await cancelled_turn(ctx)
    idle = idle_after_cancel(cancelled, "cancel-turn")
    await p.barrier()
    late = p.find(
        lambda f: f.session_id == cancelled.sid and (f.update_kind() in OUTPUT_KINDS or f.state() is not None),
        idle.index + 1,
    )
    require(not late, "ACP2-096", f"{late[0].update_kind() if late else ''} sent after the idle update of the cancel")
    return None


@V2(
    "cancel-not-error",
    "a cancelled turn does not end as a failure: no error answer, no other known stop reason",
    "cancellation",
    ("ACP2-047", "ACP2-095", "prompt-lifecycle.mdx#cancellation"),
    scenarios=("long_turn",),
)
async def cancel_not_error(ctx: CheckContext) -> str | None:
    p = ctx.probe
    cancelled = await cancelled_turn(ctx)
    answer = await p.response(cancelled.prompt_id, ctx.wait, cancelled.start)
    require(
        answer is None or answer.error is None,
        "ACP2-095",
        f"the cancelled prompt was answered with an error: {answer.error if answer else None}",
    )
    idle_after_cancel(cancelled, "cancel-turn")
    reason = cancelled.stop_reason
    require(
        reason == "cancelled" or reason not in KNOWN_STOP_REASONS,
        "ACP2-047",
        f"the cancelled turn ended with stopReason {reason!r}: cancellation is reported as cancelled",
    )
    return None


@V2(
    "cancel-stop-reason",
    "the stop reason after session/cancel is not an unknown value without the _ prefix",
    "cancellation",
    ("prompt-lifecycle.mdx#stop-reasons", "extensibility.mdx#enum-and-tagged-union-variants"),
    scenarios=("long_turn",),
)
async def cancel_stop_reason(ctx: CheckContext) -> str | None:
    cancelled = await cancelled_turn(ctx)
    idle_after_cancel(cancelled, "cancel-turn")
    reason = cancelled.stop_reason
    require(
        reason is None or reason in KNOWN_STOP_REASONS or (isinstance(reason, str) and reason.startswith("_")),
        "prompt-lifecycle.mdx#stop-reasons",
        f"stopReason {reason!r} after session/cancel is neither a stop reason of the schema nor _-prefixed",
    )
    return None


@V2(
    "cancel-unanswered",
    "session/cancel, a notification, gets no response",
    "cancellation",
    ("schema:CancelSessionNotification", "overview.mdx"),
    scenarios=("long_turn",),
)
async def cancel_unanswered(ctx: CheckContext) -> str | None:
    p = ctx.probe
    cancelled = await cancelled_turn(ctx)
    await p.barrier()
    stray = p.find(
        lambda f: (
            f.is_response and not (isinstance(f.message, dict) and f.message.get("id") in range(1, p.sent_ids + 1))
        ),
        cancelled.cancel_at,
    )
    require(
        not stray,
        "schema:CancelSessionNotification",
        f"session/cancel was answered: {stray[0].raw[:120]!r}" if stray else "",
    )
    return None


@V2(
    "cancel-with-meta",
    "session/cancel carrying _meta cancels the turn like one without",
    "cancellation",
    ("schema:CancelSessionNotification", "ACP2-093"),
    scenarios=("long_turn",),
)
async def cancel_with_meta(ctx: CheckContext) -> str | None:
    cancelled = await cancelled_turn(ctx, meta={"acp-conformance": {"reason": "user"}})
    require(
        cancelled.idle is not None and cancelled.stop_reason == "cancelled",
        "schema:CancelSessionNotification",
        f"session/cancel with _meta: no idle update with stopReason cancelled within {ctx.wait:g}s "
        f"(got {cancelled.stop_reason!r})",
    )
    return None


@V2(
    "cancel-permission",
    "session/cancel stops waiting for a pending permission request, which is not approved",
    "cancellation",
    ("ACP2-091", "ACP2-093", "ACP2-046", "ACP2-086", "ACP2-003", "ACP2-092", "ACP2-054", "ACP2-094"),
    scenarios=("permission",),
)
async def cancel_permission(ctx: CheckContext) -> str | None:
    p = ctx.probe
    scenario = ctx.scenario("permission")
    sid = await p.new_session(ctx.cwd)
    start, _rid, ask = await wait_permission(ctx, scenario, sid)
    assert ask.message is not None
    ask_id = ask.message["id"]
    cancel_at = p.mark
    # The client answers only after the idle update: the agent must not wait for the answer (ACP2-091).
    await p.notify("session/cancel", CancelSessionNotification(session_id=sid))
    idle = await p.wait_for(p.is_state(sid, "idle"), ctx.wait, cancel_at)
    require(idle is not None, "ACP2-091", f"no idle state_update within {ctx.wait:g}s after session/cancel")
    assert idle is not None
    require(
        (idle.update or {}).get("stopReason") == "cancelled",
        "ACP2-046",
        f"stopReason {(idle.update or {}).get('stopReason')!r} instead of cancelled",
    )
    withdrawn = p.find(lambda f: f.method == "$/cancel_request" and f.params.get("requestId") == ask_id, cancel_at)
    if not withdrawn:
        ctx.warn("ACP2-003", "the pending permission request was not withdrawn with $/cancel_request (SHOULD)")
    done = tool_call_completed(p, sid, permission_tool_call(ask), start)
    require(not done, "ACP2-086", "the tool call completed although its permission was never granted")
    # The client's part: answer the cancelled request with the cancelled outcome. A late answer must not
    # resume the cancelled work (SHOULD).
    answered_at = p.mark
    await p.respond(ask_id, RequestPermissionResponse(outcome=CancelledPermissionOutcome()))
    await p.barrier()
    resumed = p.find(p.is_state(sid, "running", "requires_action"), answered_at)
    if resumed:
        ctx.warn("ACP2-094", "the late cancelled answer resumed the cancelled work")
    return None


@V2(
    "held-prompt-cancel-request",
    "$/cancel_request for a prompt sent while the session is busy gets exactly one response",
    "cancellation",
    ("ACP2-001", "ACP2-002", "cancellation.mdx", "schema:PromptResponse"),
    scenarios=("long_turn",),
)
async def held_prompt_cancel_request(ctx: CheckContext) -> str | None:
    p = ctx.probe
    scenario = ctx.scenario("long_turn")
    sid = await p.new_session(ctx.cwd)
    await scenario_turn_start(ctx, scenario, sid)
    held_at, held_id = await second_prompt(ctx, sid)
    await p.barrier()  # the agent has read the prompt: it is held (or already answered)
    await p.notify("$/cancel_request", CancelRequestNotification(request_id=held_id))
    frame = await p.response(held_id, ctx.wait, held_at)
    require(frame is not None, "ACP2-001", "no response for the prompt after $/cancel_request")
    assert frame is not None
    if frame.error is None:
        message_id = frame.result.get("messageId") if isinstance(frame.result, dict) else None
        require(isinstance(message_id, str), "schema:PromptResponse", f"success without a messageId: {frame.result}")
        ctx.note("the agent inserted the second prompt while busy (or before the cancel arrived): nothing was held")
    elif frame.error_code != -32800:
        ctx.note(f"the agent refused a prompt while busy ({frame.error}): nothing was held")
    else:
        await p.barrier()
        users = p.find(
            lambda f: (
                f.session_id == sid
                and f.update_kind() in ("user_message", "user_message_chunk")
                and "A second prompt" in texts(f.update or {})
            ),
            held_at,
        )
        require(not users, "cancellation.mdx", "the withdrawn prompt (-32800) was inserted anyway")
    await p.notify("$/cancel_request", CancelRequestNotification(request_id=held_id))
    await p.barrier()
    answers = p.find(lambda f: f.is_response and (f.message or {}).get("id") == held_id, held_at)
    require(len(answers) == 1, "ACP2-002", f"{len(answers)} responses for one request id")
    await p.notify("session/cancel", CancelSessionNotification(session_id=sid))
    return None


@V2(
    "cancel-held-prompts",
    "session/cancel also answers prompts held (not inserted) while the session was busy with -32800",
    "cancellation",
    ("schema:CancelSessionNotification", "cancellation.mdx"),
    scenarios=("long_turn",),
)
async def cancel_held_prompts(ctx: CheckContext) -> str | None:
    p = ctx.probe
    scenario = ctx.scenario("long_turn")
    sid = await p.new_session(ctx.cwd)
    await scenario_turn_start(ctx, scenario, sid)
    held_at, held_id = await second_prompt(ctx, sid)
    await p.barrier()
    early = p.find(lambda f: f.is_response and (f.message or {}).get("id") == held_id, held_at)
    if early:
        await p.notify("session/cancel", CancelSessionNotification(session_id=sid))
        raise NotApplicable("the agent answered the second prompt at once (it inserts or refuses, never holds)")
    await p.notify("session/cancel", CancelSessionNotification(session_id=sid))
    frame = await p.response(held_id, ctx.wait, held_at)
    require(
        frame is not None and frame.error_code == -32800,
        "schema:CancelSessionNotification",
        "a prompt held while busy (not inserted) must be answered -32800 when the session is cancelled, got "
        f"{frame.message if frame else 'no response'}",
    )
    await p.notify("session/cancel", CancelSessionNotification(session_id=sid))  # a prompt it inserted instead
    return None


@V2(
    "cancel-request-ignored",
    "$/cancel_request for unknown or answered ids gets no response",
    "cancellation",
    ("ACP2-002",),
    needs_session=False,
)
async def cancel_request_ignored(ctx: CheckContext) -> str | None:
    p = ctx.probe
    answered = await p.call("session/list", ListSessionsRequest(), rule="session-list.mdx")
    assert answered.message is not None
    mark = p.mark
    answered_id = answered.message["id"]
    for rid in (answered_id, 987654):
        await p.notify("$/cancel_request", CancelRequestNotification(request_id=rid))
    await p.barrier()
    stray = p.find(lambda f: f.is_response and (f.message or {}).get("id") in (answered_id, 987654), mark)
    require(
        not stray,
        "ACP2-002",
        f"answered a $/cancel_request for an unknown or answered id: {stray[0].raw!r}" if stray else "",
    )
    return None
