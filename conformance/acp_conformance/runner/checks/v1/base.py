"""What the v1 area modules share: the ``V1`` decorator, the v1 schema (strict) of any value and of each message an
agent writes (the result of each method it implements, the params of each request and notification it sends:
what ``message-schema`` validates and ``custom-root-fields`` compares root keys with; the generated types are the
schema, a field of a type is a property of its ``$def``), the prompt response and its stop reason (v1 has no idle
update: the response ends the turn)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import msgspec

from acp_session.codec import TypedDecoder, decoder
from acp_session.schema import v1

from ...client_calls import ELICITATION, V1_CLIENT_METHODS
from ...frames import Frame, Turn
from ...outcomes import AUTH_REQUIRED, LoginRequired
from ...probe import Probe
from ...registry import CheckContext, CheckFn, check, require
from ..common import HELLO

__all__ = [
    "AGENT_SENDS",
    "Exchange",
    "RESULTS",
    "STOP_REASONS",
    "V1",
    "basic_exchange",
    "exchange_messages",
    "decode_problem",
    "message_problem",
    "message_type",
    "require_stop_reason",
    "response_or_fail",
    "schema_problem",
    "stop_reason_of",
    "unknown_root_keys",
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


@dataclass(frozen=True)
class Exchange:
    """A basic exchange: a new session and one short turn, with the barrier after it."""

    start: int  # the frame index where it began (before session/new)
    sid: str
    turn: Turn
    end: int  # the frame index after the barrier's answer
    wire_start: int  # where it began in the wire transcript


async def basic_exchange(ctx: CheckContext) -> Exchange:
    """A session and a short turn on the check's process, run once per process: the checks that only look at what
    a basic exchange puts on the wire (its lines, their schema, its updates, its answer) share it, so an agent whose
    turns are slow or costly runs one such turn per process, not one per check. Each check judges its own
    observation of the same lines; a failure's excerpt starts at the exchange."""
    p = ctx.probe
    cached = p.memo.get("basic exchange")
    if not isinstance(cached, Exchange):
        start, wire_start = p.mark, len(p.wire)
        sid = await p.new_session(ctx.cwd)
        turn = await p.run_turn(sid, HELLO)
        await p.barrier()
        cached = p.memo["basic exchange"] = Exchange(start, sid, turn, p.mark, wire_start)
    ctx.transcript_from = cached.wire_start
    return cached


def exchange_messages(p: Probe, exchange: Exchange) -> list[Frame]:
    """The agent's messages of a basic exchange: its process's initialize answer, then the exchange's."""
    head = [p.frames[p.init_index]] if p.init_index >= 0 else []
    return head + [f for f in p.frames[exchange.start : exchange.end] if f.message is not None]


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


RESULTS: dict[str, type[msgspec.Struct]] = {
    "initialize": v1.InitializeResponse,
    "authenticate": v1.AuthenticateResponse,
    "logout": v1.LogoutResponse,
    "session/new": v1.NewSessionResponse,
    "session/load": v1.LoadSessionResponse,
    "session/list": v1.ListSessionsResponse,
    "session/resume": v1.ResumeSessionResponse,
    "session/close": v1.CloseSessionResponse,
    "session/delete": v1.DeleteSessionResponse,
    "session/prompt": v1.PromptResponse,
    "session/set_mode": v1.SetSessionModeResponse,
    "session/set_config_option": v1.SetSessionConfigOptionResponse,
}
"""The result type of each method the agent implements."""

AGENT_SENDS: dict[str, Any] = {
    "session/update": v1.SessionNotification,
    "session/request_permission": v1.RequestPermissionRequest,
    **{method: spec[0] for method, spec in V1_CLIENT_METHODS.items()},
    ELICITATION: v1.CreateElicitationRequest,
    "elicitation/complete": v1.CompleteElicitationNotification,
    "$/cancel_request": v1.CancelRequestNotification,
}
"""The params type of each request and notification an agent may send."""


def message_type(p: Probe, frame: Frame) -> tuple[str, Any] | None:
    """``(what, type)`` of one agent message: the params of a request or notification it sent, or the result of a
    success answering one of our requests; None when no type applies (an error, an ``_`` method, a method the
    runner did not send)."""
    message = frame.message or {}
    method = frame.method
    if method is not None:
        if method.startswith("_"):
            return None  # custom methods have no schema (extensibility.mdx)
        return f"{method} params", AGENT_SENDS.get(method)
    if "result" not in message:
        return None
    rid = message.get("id")
    sent = p.sent_methods.get(rid) if isinstance(rid, int) and not isinstance(rid, bool) else None
    if sent is None or sent not in RESULTS:
        return None
    return f"{sent} result", RESULTS[sent]


def message_problem(p: Probe, frame: Frame) -> str | None:
    """Why one agent message does not match the v1 schema, or None (also for messages no type applies to)."""
    typed = message_type(p, frame)
    if typed is None:
        return None
    what, tp = typed
    if tp is None:
        return f"{frame.method!r} is no method an agent sends in v1"
    message = frame.message or {}
    value = message.get("params") if frame.method is not None else message.get("result")
    problem = schema_problem(tp, value)
    return None if problem is None else f"line {frame.index + 1}: the {what} do(es) not match the v1 schema: {problem}"


def unknown_root_keys(p: Probe, frame: Frame) -> tuple[str, list[str]] | None:
    """``(what, keys)``: the root keys of one agent message's params or result that its v1 type does not have
    (``_meta`` is where custom data goes, so it is always allowed); None when no type applies."""
    typed = message_type(p, frame)
    if typed is None or typed[1] is None:
        return None
    what, tp = typed
    message = frame.message or {}
    value = message.get("params") if frame.method is not None else message.get("result")
    if not isinstance(value, dict) or not isinstance(tp, type) or not issubclass(tp, msgspec.Struct):
        return None
    allowed = {field.encode_name for field in msgspec.structs.fields(tp)} | {"_meta"}
    return what, sorted(key for key in value if key not in allowed)
