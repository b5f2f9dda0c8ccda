"""Spans of the requests the agent sends the client: ``fs/*``, ``terminal/*``, ``elicitation/create``, ``mcp/message``,
extension methods. One ``SERVER`` span each (the client serves them), around the request's handling: the
connection's ``incoming_request_hook`` wraps the decoding of the params and the handler, so the span ends with
the outcome the agent is answered with (a JSON-RPC error code when it is an error).

``session/request_permission`` keeps its own span (``ConnectionTelemetry.permission``: it knows the question and
the answer in the model's types); it is parented the same way (``incoming_parent``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
import msgspec
from opentelemetry import context as otel_context
from opentelemetry.context import Context
from opentelemetry.trace import Link, Span, Status, StatusCode, get_current_span, set_span_in_context

from ..errors import InternalError, RequestCancelled, RpcError
from . import names
from .context import context_from_meta, link_from_meta
from .turns import TurnTrace, struct_tag

__all__ = ["RequestPeek", "incoming_parent", "peek", "traced_handling"]

_log = logging.getLogger("acp_session.telemetry")


class RequestPeek(msgspec.Struct):
    """The few params fields a span names (read from the raw params; wrong types are ignored)."""

    sessionId: Any = None
    toolCallId: Any = None
    terminalId: Any = None
    mode: Any = None
    meta: Any = msgspec.field(default=None, name="_meta")


_PEEK = msgspec.json.Decoder(RequestPeek)
_NOTHING = RequestPeek()


def peek(params: msgspec.Raw | None) -> RequestPeek:
    """The fields of ``params`` a span names; nothing for params that are not a JSON object."""
    if params is None:
        return _NOTHING
    try:
        return _PEEK.decode(params)
    except (msgspec.DecodeError, RecursionError):
        return _NOTHING


def text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def incoming_parent(
    turns: Mapping[str, TurnTrace], session_id: str | None, tool_call_id: str | None, meta: Any
) -> tuple[Context, list[Link]]:
    """Where the span of an agent's request goes: under the tool call it names, else under its session's running
    turn (linked to the agent's trace context when ``_meta`` carries one); without a turn, under the agent's
    ``traceparent``; without either, a new trace (never the span that happened to be current when the connection
    started)."""
    turn = turns.get(session_id) if session_id is not None else None
    if turn is not None:
        return set_span_in_context(turn.span_for_tool(tool_call_id)), link_from_meta(meta)
    remote = context_from_meta(meta)
    if remote is not None and get_current_span(remote).get_span_context().is_valid:
        return remote, []
    return Context(), []


async def traced_handling(span: Span, method: str, handling: Awaitable[Any]) -> Any:
    """Await ``handling`` with ``span`` current, then end the span with its outcome; the result or the exception
    goes on unchanged (a failure to record is logged, never raised)."""
    token = otel_context.attach(set_span_in_context(span))
    try:
        result = await handling
    except RpcError as exc:
        _quietly(_answered_error, span, exc.code, type(exc).__name__, exc.message, None)
        raise
    except Exception as exc:  # the connection answers -32603, the details stay here
        _quietly(_answered_error, span, InternalError.default_code, type(exc).__name__, str(exc), exc)
        raise
    except BaseException as exc:
        if isinstance(exc, anyio.get_cancelled_exc_class()):  # withdrawn or closing: answered -32800
            _quietly(_answered_error, span, RequestCancelled.default_code, "RequestCancelled", "cancelled", None)
        else:
            _quietly(_answered_error, span, InternalError.default_code, type(exc).__name__, str(exc), exc)
        raise
    finally:
        otel_context.detach(token)
    _quietly(_answered, span, method, result)
    return result


def _answered(span: Span, method: str, result: Any) -> None:
    if method == "terminal/create":
        terminal_id = text(getattr(result, "terminal_id", None))
        if terminal_id is None and isinstance(result, dict):
            terminal_id = text(result.get("terminalId"))
        if terminal_id is not None:
            span.set_attribute(names.TERMINAL_ID, terminal_id)
    elif method == "elicitation/create":
        action = struct_tag(result) or (text(result.get("action")) if isinstance(result, dict) else None)
        if action:
            span.set_attribute(names.ELICITATION_ACTION, action)
    span.end()


def _answered_error(span: Span, code: int, kind: str, message: str, exc: BaseException | None) -> None:
    if exc is not None:
        span.record_exception(exc)
    span.set_status(Status(StatusCode.ERROR, message or kind))
    span.set_attribute(names.ERROR_TYPE, kind)
    span.set_attribute(names.RPC_ERROR_CODE, code)
    span.end()


def _quietly(fn: Callable[..., None], *args: Any) -> None:
    try:
        fn(*args)
    except Exception:
        _log.exception("recording a span failed")
