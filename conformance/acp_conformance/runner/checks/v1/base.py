"""What the v1 area modules share: the ``V1`` decorator, the v1 schema check of a ``session/update``, the prompt
response and its stop reason (v1 has no idle update: the response ends the turn)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from acp_session.codec import decoder
from acp_session.schema import v1

from ...frames import Frame
from ...outcomes import AUTH_REQUIRED, LoginRequired
from ...probe import Probe
from ...registry import CheckFn, check, require
from ..common import update_schema_problem

__all__ = ["STOP_REASONS", "V1", "decode_problem", "require_stop_reason", "response_or_fail", "stop_reason_of"]


# Closed enums of the stable v1 schema.
STOP_REASONS = frozenset({"end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"})
_notification = decoder(v1.SessionNotification)


def V1(id: str, title: str, area: str, rules: tuple[str, ...], **kwargs: Any) -> Callable[[CheckFn], CheckFn]:
    return check(1, id, title, area, rules, **kwargs)


def decode_problem(frame: Frame) -> str | None:
    return update_schema_problem(frame, _notification, "the v1 schema")


def stop_reason_of(frame: Frame) -> Any:
    return frame.result.get("stopReason") if isinstance(frame.result, dict) else None


def require_stop_reason(frame: Frame) -> str:
    reason = stop_reason_of(frame)
    require(
        reason in STOP_REASONS,
        "prompt-turn.mdx#stop-reasons",
        f"the prompt response's stopReason {reason!r} is not one of the v1 schema's {sorted(STOP_REASONS)}",
    )
    return str(reason)


async def response_or_fail(p: Probe, rid: int, start: int, wait: float, rule: str, what: str) -> Frame:
    frame = await p.response(rid, wait, start)
    require(frame is not None, rule, f"no response to {what} within {wait:g}s")
    assert frame is not None
    if frame.error_code == AUTH_REQUIRED:
        raise LoginRequired("session/prompt", frame.error)
    return frame
