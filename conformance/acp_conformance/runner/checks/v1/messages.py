"""The v1 schema's type of every message an agent writes: the result of each method it implements, the params of
each request and notification it sends. What ``message-schema`` validates against and what ``custom-root-fields``
compares root keys with (the generated types are the schema: a field of a type is a property of its ``$def``)."""

from __future__ import annotations

from typing import Any

import msgspec

from acp_session.schema import v1

from ...client_calls import ELICITATION, V1_CLIENT_METHODS
from ...frames import Frame
from ...probe import Probe
from .base import schema_problem as type_problem

__all__ = ["AGENT_SENDS", "RESULTS", "message_type", "message_problem", "unknown_root_keys"]

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
    problem = type_problem(tp, value)
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
