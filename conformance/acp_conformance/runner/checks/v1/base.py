"""What the v1 area modules share: the ``V1`` decorator, the v1 schema check of a ``session/update``, the prompt
response and its stop reason (v1 has no idle update: the response ends the turn)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, cast

import msgspec

from acp_session.codec import TypedDecoder, decoder
from acp_session.schema import v1

from ...frames import Frame
from ...outcomes import AUTH_REQUIRED, LoginRequired
from ...probe import Probe
from ...registry import CheckFn, check, require

__all__ = [
    "STOP_REASONS",
    "V1",
    "decode_problem",
    "require_stop_reason",
    "response_or_fail",
    "schema_problem",
    "stop_reason_of",
]


# Closed enums of the stable v1 schema.
STOP_REASONS = frozenset({"end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"})
_CUSTOM_TAG = re.compile(r"Invalid value '_[^']*'")


def schema_problem(tp: Any, value: Any) -> str | None:
    """Why ``value`` is not a ``tp`` of the v1 schema, or None. Strict: the library's own decoding forgives what
    the schema marks as tolerable for a reader (a wrong ``_meta``, an invalid item skipped), a conformance check
    does not; only a custom (``_``) variant of an open union is let through (extensibility.mdx). An all-optional
    result sent as null counts as ``{}`` (the kit tolerates it too; load-result-object says more)."""
    strict = cast(TypedDecoder, decoder(tp)).msgspec_decoder  # the library's strict first pass, before any leniency
    try:
        strict.decode(msgspec.json.encode(value if value is not None else {}))
    except msgspec.ValidationError as exc:
        if _CUSTOM_TAG.match(str(exc)):
            return None
        return str(exc)
    return None


def V1(id: str, title: str, area: str, rules: tuple[str, ...], **kwargs: Any) -> Callable[[CheckFn], CheckFn]:
    return check(1, id, title, area, rules, **kwargs)


def decode_problem(frame: Frame) -> str | None:
    """Why a ``session/update`` frame does not match the v1 schema (strictly, as ``schema_problem``), or None."""
    problem = schema_problem(v1.SessionNotification, frame.params)
    return (
        None if problem is None else f"line {frame.index + 1}: session/update does not match the v1 schema: {problem}"
    )


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
