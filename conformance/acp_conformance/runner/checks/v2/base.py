"""What the v2 area modules share: the ``V2`` decorator, strict schema matching, a plain turn, a cancelled turn, a
second prompt sent while the first runs, a prompt that must be accepted, and the values the v2 schema knows."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from acp_session.codec import decoder
from acp_session.schema.types import UpdateSessionNotification

from ...frames import Frame, Turn
from ...outcomes import AUTH_REQUIRED, LoginRequired, NotApplicable
from ...probe import Probe
from ...registry import CheckContext, CheckFn, check, require
from ...schema_strict import schema_problem
from ..common import HELLO, scenario_turn_start, update_schema_problem

__all__ = [
    "CLIENT_METHODS",
    "KNOWN_STOP_REASONS",
    "MESSAGE_UPDATES",
    "UPDATE_KINDS",
    "V2",
    "Cancelled",
    "accepted",
    "cancelled_turn",
    "decode_update",
    "hello_turn",
    "idle_after_cancel",
    "message_id",
    "second_prompt",
    "strict",
]

_update_decode = decoder(UpdateSessionNotification)

KNOWN_STOP_REASONS = frozenset({"end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled", "error"})
UPDATE_KINDS = frozenset(
    {
        "user_message_chunk",
        "user_message",
        "agent_message_chunk",
        "agent_message",
        "agent_thought_chunk",
        "agent_thought",
        "state_update",
        "tool_call_content_chunk",
        "tool_call_update",
        "terminal_update",
        "terminal_output_chunk",
        "plan_update",
        "available_commands_update",
        "config_option_update",
        "session_info_update",
        "usage_update",
        "notice",
        "compaction_update",
        "compaction_summary_chunk",
    }
)
"""The ``sessionUpdate`` kinds of the v2 schema's ``SessionUpdate``."""
MESSAGE_UPDATES = frozenset(
    {
        "user_message",
        "user_message_chunk",
        "agent_message",
        "agent_message_chunk",
        "agent_thought",
        "agent_thought_chunk",
    }
)
CLIENT_METHODS = frozenset(
    {"session/update", "session/request_permission", "elicitation/create", "elicitation/complete", "$/cancel_request"}
)
"""What a v2 agent may call or notify on the client (the schema's client-side methods and ``$/cancel_request``)."""


def V2(id: str, title: str, area: str, rules: tuple[str, ...], **kwargs: Any) -> Callable[[CheckFn], CheckFn]:
    return check(2, id, title, area, rules, **kwargs)


def decode_update(frame: Frame) -> str | None:
    return update_schema_problem(frame, _update_decode, "the schema")


def strict(value: Any, tp: Any, rule: str, what: str) -> None:
    """Fail naming ``rule`` unless ``value`` matches the schema type ``tp`` strictly (``schema_strict``)."""
    problem = schema_problem(value, tp)
    require(problem is None, rule, f"{what} does not match the schema: {problem}")


def message_id(result: Any) -> str | None:
    """The ``messageId`` of a prompt's answer, when it is a non-empty string."""
    value = result.get("messageId") if isinstance(result, dict) else None
    return value if isinstance(value, str) and value else None


async def hello_turn(ctx: CheckContext, *, settle: bool = True) -> tuple[str, Turn]:
    """A new session and one plain turn in it (``settle``: its end may be the agent going quiet, see ``Probe``)."""
    sid = await ctx.probe.new_session(ctx.cwd)
    return sid, await ctx.probe.run_turn(sid, HELLO, settle=settle)


async def second_prompt(ctx: CheckContext, sid: str) -> tuple[int, int]:
    p = ctx.probe
    at = p.mark
    return at, await p.prompt(sid, "A second prompt, sent while the first one runs.")


async def accepted(p: Probe, sid: str, start: int, rid: int, rule: str, what: str) -> None:
    """The prompt ``rid`` was answered without an error (-32000 is a login the run lacks), then its turn settles."""
    frame = await p.response(rid, start=start)
    require(frame is not None, rule, f"no response to {what}")
    assert frame is not None
    if frame.error_code == AUTH_REQUIRED:
        raise LoginRequired("session/prompt", frame.error)
    require(frame.error is None, rule, f"{what} was rejected: {frame.message}")
    await p.settle(sid, start)  # the idle update is turn-lifecycle's subject


@dataclass
class Cancelled:
    """A ``long_turn`` turn cancelled once it showed output: where it started, where the cancel was sent, and the
    first idle update after the cancel (None when none came within the wait)."""

    sid: str
    start: int
    prompt_id: int
    cancel_at: int
    idle: Frame | None

    @property
    def stop_reason(self) -> Any:
        return (self.idle.update or {}).get("stopReason") if self.idle is not None else None


async def cancelled_turn(ctx: CheckContext, *, meta: dict[str, Any] | None = None) -> Cancelled:
    """Start the ``long_turn`` scenario, send ``session/cancel`` (with ``meta`` as its ``_meta``) at its first
    output, and wait for the idle update that follows."""
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    start, rid = await scenario_turn_start(ctx, ctx.scenario("long_turn"), sid)
    cancel_at = p.mark
    await p.notify("session/cancel", {"sessionId": sid, **({"_meta": meta} if meta is not None else {})})
    idle = await p.wait_for(p.is_state(sid, "idle"), ctx.wait, cancel_at)
    return Cancelled(sid, start, rid, cancel_at, idle)


def idle_after_cancel(cancelled: Cancelled, whose: str) -> Frame:
    """The idle update ending the cancelled turn, or not applicable (its absence is ``whose`` subject)."""
    if cancelled.idle is None:
        raise NotApplicable(f"no idle state_update came after session/cancel ({whose}'s subject)")
    return cancelled.idle
