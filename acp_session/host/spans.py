"""The host's spans of what its clients do (``tracing.host_tracing`` makes one; docs/observability.md lists them).

Names follow the library's client instrumentation (``acp_session.telemetry.names``): a request the host serves is
a ``SERVER`` span named by its method, under the trace context the client put into its ``_meta`` (the Meta
Propagation RFD's ``traceparent``), else under the client's connection span; a permission request the host sends
a client is a ``CLIENT`` span under the host's own span of the agent's request, and carries its trace context on
in ``_meta``. A client's connection is one span, from connect to disconnect.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, set_span_in_context

from .._version import __version__
from ..errors import RpcError
from ..rpc import Connection
from ..telemetry import names
from ..telemetry.bounds import AttributeLimits, BoundedTracer
from ..telemetry.context import context_from_meta, with_trace_context
from ..telemetry.turns import struct_tag
from .tracing import Handled, NoTracing

__all__ = ["HostSpans"]

H = TypeVar("H")
SCOPE = "acp_session.host"


class HostSpans(NoTracing):
    """Spans of a host's clients, from the tracer provider given (else the global one)."""

    def __init__(self, tracer_provider: Any = None) -> None:
        self.tracer = BoundedTracer(trace.get_tracer(SCOPE, __version__, tracer_provider), AttributeLimits())
        self._connections: dict[str, Span] = {}
        self._asked_under: weakref.WeakKeyDictionary[Hashable, Context] = weakref.WeakKeyDictionary()
        self._asks: weakref.WeakKeyDictionary[Hashable, dict[str, Span]] = weakref.WeakKeyDictionary()

    def connected(self, client: str, profile: str) -> None:
        attributes = {names.HOST_CLIENT: client, names.HOST_PROFILE: profile}
        span = self.tracer.start_span(names.SPAN_HOST_CONNECTION, Context(), SpanKind.SERVER, attributes)
        self._connections[client] = span

    def disconnected(self, client: str) -> None:
        span = self._connections.pop(client, None)
        if span is not None:
            span.end()

    def serving(self, rpc: Connection) -> None:
        rpc.request_params_hook = with_trace_context

    @contextmanager
    def handling(self, method: str, client: str, session_id: str | None, meta: Any) -> Iterator[Handled]:
        parent = context_from_meta(meta)
        if parent is None or not trace.get_current_span(parent).get_span_context().is_valid:
            connection = self._connections.get(client)
            parent = set_span_in_context(connection) if connection is not None else Context()
        attributes: dict[str, Any] = {names.RPC_SYSTEM: "jsonrpc", names.RPC_METHOD: method, names.HOST_CLIENT: client}
        if session_id is not None:
            attributes[names.SESSION_ID] = attributes[names.CONVERSATION_ID] = session_id
        span = self.tracer.start_span(method, parent, SpanKind.SERVER, attributes)
        token = otel_context.attach(set_span_in_context(span))
        handled = Handled(session_id)
        try:
            yield handled
        except BaseException as exc:
            _failed(span, exc)
            raise
        else:
            if handled.session_id is not None and session_id is None:
                span.set_attribute(names.SESSION_ID, handled.session_id)
                span.set_attribute(names.CONVERSATION_ID, handled.session_id)
            if handled.replayed is not None:
                span.set_attribute(names.HOST_REPLAYED, handled.replayed)
            span.end()
        finally:
            otel_context.detach(token)

    def permission_asked(self, ask: Hashable) -> None:
        self._asked_under[ask] = otel_context.get_current()

    def asking(self, ask: Hashable, client: str, send: Callable[[], H]) -> H:
        request = getattr(ask, "request", None)
        session_id = getattr(request, "session_id", None)
        attributes: dict[str, Any] = {
            names.RPC_SYSTEM: "jsonrpc",
            names.RPC_METHOD: names.SPAN_PERMISSION,
            names.HOST_CLIENT: client,
        }
        if isinstance(session_id, str):
            attributes[names.SESSION_ID] = attributes[names.CONVERSATION_ID] = session_id
        parent = self._asked_under.get(ask, Context())
        span = self.tracer.start_span(names.SPAN_PERMISSION, parent, SpanKind.CLIENT, attributes)
        token = otel_context.attach(set_span_in_context(span))
        try:
            handle = send()
        except BaseException as exc:
            _failed(span, exc)
            raise
        finally:
            otel_context.detach(token)
        self._asks.setdefault(ask, {})[client] = span
        return handle

    def client_answered(self, ask: Hashable, client: str, answer: Any, error: BaseException | None) -> None:
        span = self._asks.get(ask, {}).pop(client, None)
        if span is None:
            return
        if error is not None:
            _failed(span, error)
            return
        _outcome(span, answer)
        span.end()

    def permission_settled(self, ask: Hashable, answered_by: str | None, answer: Any) -> None:
        self._asked_under.pop(ask, None)
        for span in self._asks.pop(ask, {}).values():  # asked, not answered: withdrawn (``$/cancel_request``)
            span.set_attribute(names.PERMISSION_OUTCOME, "withdrawn")
            span.end()
        span = trace.get_current_span()  # the host's own span of the agent's request, when the client side traces
        if span.is_recording():
            span.set_attribute(names.HOST_ANSWERED_BY, answered_by if answered_by is not None else "policy")


def _outcome(span: Span, answer: Any) -> None:
    outcome = getattr(answer, "outcome", None)
    span.set_attribute(names.PERMISSION_OUTCOME, struct_tag(outcome) or "unknown")
    option_id = getattr(outcome, "option_id", None)
    if isinstance(option_id, str):
        span.set_attribute(names.PERMISSION_OPTION_ID, option_id)


def _failed(span: Span, exc: BaseException) -> None:
    span.set_status(Status(StatusCode.ERROR, str(exc) or type(exc).__name__))
    span.set_attribute(names.ERROR_TYPE, type(exc).__name__)
    if isinstance(exc, RpcError):
        span.set_attribute(names.RPC_ERROR_CODE, exc.code)
    span.end()
