"""``Instrumentation``: OpenTelemetry spans and metrics for a ``ClientBuilder``'s connections (opt-in).

``ClientBuilder.instrument()`` makes one; each connection then gets a ``ConnectionTelemetry``, which its hub
calls at the few places a request starts (initialize, each request, each prompt, each permission question) and
which the connection calls around each request the agent sends (``Connection.incoming_request_hook``).
A builder without it never imports this package, so a connection without instrumentation does no extra work.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import msgspec
from opentelemetry import context as otel_context
from opentelemetry import metrics, trace
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, TracerProvider, set_span_in_context

from .._version import __version__
from ..errors import RpcError
from ..rpc import Connection, PendingRequest
from ..schema.types import (
    InitializeResponse,
    RequestPermissionRequest,
    RequestPermissionResponse,
    ToolCallPermissionSubject,
)
from . import names
from .bounds import DEFAULT_MAX_ATTRIBUTE_LENGTH, AttributeLimits, BoundedTracer
from .context import with_trace_context
from .incoming import incoming_parent, peek, text, traced_handling
from .turns import TurnTrace, struct_tag

if TYPE_CHECKING:
    from ..protocol.base import ProtocolAdapter

__all__ = ["ConnectionTelemetry", "Instrumentation", "TracedHub"]

T = TypeVar("T")
SCOPE = "acp_session"
_log = logging.getLogger("acp_session.telemetry")


class TracedHub(Protocol):
    """What a connection's telemetry reads of the connection's hub (``client._hub.ConnectionHub``): its peer, the
    agreed protocol and ``initialize`` answer, and its task group. A protocol, so telemetry names nothing of the
    client package that calls it."""

    @property
    def rpc(self) -> Connection: ...

    @property
    def protocol(self) -> ProtocolAdapter: ...

    @property
    def initialize_response(self) -> InitializeResponse | None: ...

    def start_soon(self, fn: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> None: ...


class Instrumentation:
    """The tracer and the metric instruments (from the given providers, else the global ones)."""

    def __init__(
        self,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        *,
        propagate: bool = True,
        max_attribute_length: int = DEFAULT_MAX_ATTRIBUTE_LENGTH,
        titles: bool = True,
    ) -> None:
        self.limits = AttributeLimits(max_attribute_length, titles)
        """How long the agent's strings may be in a span, and whether its titles go in (``bounds``)."""
        self.tracer = BoundedTracer(trace.get_tracer(SCOPE, __version__, tracer_provider), self.limits)
        meter = metrics.get_meter(SCOPE, __version__, meter_provider)
        self.propagate = propagate
        """Whether outgoing requests carry the current trace context in ``_meta``."""
        self.turn_duration = meter.create_histogram(
            names.METRIC_DURATION, unit="s", description="Prompt turns: from session/prompt to the idle state"
        )
        self.first_chunk = meter.create_histogram(
            names.METRIC_FIRST_CHUNK, unit="s", description="From session/prompt to the turn's first chunk"
        )
        self.tokens = meter.create_histogram(
            names.METRIC_TOKENS, unit="{token}", description="Tokens of each turn the agent reported"
        )

    def connection(self, hub: TracedHub) -> ConnectionTelemetry:
        return ConnectionTelemetry(self, hub)

    @contextmanager
    def reconnect(
        self, attempt: int = 1, transport: str | None = None, attributes: dict[str, Any] | None = None
    ) -> Iterator[Span]:
        """A span around one reconnect attempt, current in the block (so the new connection's ``initialize`` and
        ``session/resume`` are its children); it ends with the block, in error when the block raises."""
        attributes = {**(attributes or {}), names.RECONNECT_ATTEMPT: attempt}
        if transport is not None:
            attributes[names.RECONNECT_TRANSPORT] = transport
        span_name = names.SPAN_RECONNECT
        with self.tracer.start_as_current_span(span_name, kind=SpanKind.CLIENT, attributes=attributes) as span:
            yield span


class ConnectionTelemetry:
    """One connection's spans: what its hub calls when telemetry is on."""

    def __init__(self, instrumentation: Instrumentation, hub: TracedHub) -> None:
        self.instrumentation = instrumentation
        self.tracer = instrumentation.tracer
        self.hub = hub
        self.turns: dict[str, TurnTrace] = {}
        """The running turn of each session, so the agent's requests (permission questions too) go under it."""
        self.attach(hub.rpc)

    def attach(self, rpc: Connection) -> None:
        """Hook into ``rpc``, the connection's peer (the first one, or a reconnect's new one before its
        ``initialize``): trace context in outgoing ``_meta``, a span per request the agent sends, running turns
        ended when it closes."""
        if self.instrumentation.propagate:
            rpc.request_params_hook = with_trace_context
        rpc.incoming_request_hook = self.incoming_request
        self.hub.start_soon(self._end_turns_on_close, rpc)

    async def _end_turns_on_close(self, rpc: Connection) -> None:
        """A turn still running when the connection ends (the agent died, the block was left) ends with it, in
        error, instead of never being exported."""
        try:
            await rpc.wait_closed()
        finally:
            for turn in list(self.turns.values()):
                turn.answered(ConnectionError("the connection ended during the turn"))

    def reconnect(self, attempt: int = 1, transport: str | None = None) -> AbstractContextManager[Span]:
        """The span of one reconnect attempt of this connection (``Instrumentation.reconnect``), with the
        agent's attributes; the reconnect logic wraps each attempt in it: ``with hub.telemetry.reconnect(n):``."""
        return self.instrumentation.reconnect(attempt, transport, self._agent_attributes())

    def _agent_attributes(self) -> dict[str, Any]:
        response = self.hub.initialize_response
        if response is None:
            return {}
        info = response.info
        attributes: dict[str, Any] = {names.PROTOCOL_VERSION: self.hub.protocol.version}
        if isinstance(getattr(info, "name", None), str):
            attributes[names.AGENT_NAME] = info.name
        if isinstance(getattr(info, "version", None), str):
            attributes[names.AGENT_VERSION] = info.version
        return attributes

    @contextmanager
    def initializing(self) -> Iterator[None]:
        """The span of ``initialize`` (current while it runs, so the request carries it)."""
        with self.tracer.start_as_current_span(
            names.SPAN_INITIALIZE,
            kind=SpanKind.CLIENT,
            attributes={names.RPC_SYSTEM: "jsonrpc", names.RPC_METHOD: "initialize"},
        ) as span:
            yield
            span.set_attributes(self._agent_attributes())

    def request(self, method: str, params: Any, send: Callable[[], PendingRequest[T]]) -> PendingRequest[T]:
        """A span for one request the client sends (``session/new``, ``session/resume``, ...), current while it
        is sent and ended when the answer is in; a session-opening answer names its session."""
        attributes: dict[str, Any] = {names.RPC_SYSTEM: "jsonrpc", names.RPC_METHOD: method}
        session_id = getattr(params, "session_id", None)
        if isinstance(session_id, str):
            attributes[names.SESSION_ID] = attributes[names.CONVERSATION_ID] = session_id
        attributes.update(self._agent_attributes())
        span = self.tracer.start_span(method, kind=SpanKind.CLIENT, attributes=attributes)
        with otel_context_of(span):
            try:
                request = send()
            except BaseException as exc:
                _failed(span, exc)
                raise
        request.add_done_callback(lambda done: _request_done(span, done))
        return request

    def incoming_request(self, method: str, params: msgspec.Raw | None, handling: Awaitable[Any]) -> Awaitable[Any]:
        """The span of a request the agent sent (``Connection.incoming_request_hook``), named by its method, from
        the decoding of its params to the answer; ``session/request_permission`` has its own (``permission``).
        Should starting the span fail, the request is handled exactly as without telemetry."""
        if method == names.SPAN_PERMISSION:
            return handling
        try:
            fields = peek(params)
            session_id, tool_call_id = text(fields.sessionId), text(fields.toolCallId)
            attributes: dict[str, Any] = {names.RPC_SYSTEM: "jsonrpc", names.RPC_METHOD: method}
            if session_id is not None:
                attributes[names.SESSION_ID] = attributes[names.CONVERSATION_ID] = session_id
            if tool_call_id is not None:
                attributes[names.TOOL_CALL_ID] = tool_call_id
            terminal_id = text(fields.terminalId)
            if terminal_id is not None and method.startswith("terminal/"):
                attributes[names.TERMINAL_ID] = terminal_id
            mode = text(fields.mode)
            if mode is not None and method == "elicitation/create":
                attributes[names.ELICITATION_MODE] = mode
            attributes.update(self._agent_attributes())
            parent, links = incoming_parent(self.turns, session_id, tool_call_id, fields.meta)
            span = self.tracer.start_span(
                method, context=parent, kind=SpanKind.SERVER, attributes=attributes, links=links
            )
        except Exception:
            _log.exception("starting the span of the agent's %s failed", method)
            return handling
        return traced_handling(span, method, handling)

    def turn(self, session_id: str) -> TurnTrace:
        """Start a prompt turn's span (``invoke_agent``); the caller sends the prompt inside ``turn.sending()``,
        then hands the turn the session's track and the request (``turn.follow``)."""
        attributes: dict[str, Any] = {
            names.OPERATION_NAME: names.INVOKE_AGENT,
            names.SESSION_ID: session_id,
            names.CONVERSATION_ID: session_id,
            names.RPC_SYSTEM: "jsonrpc",
            names.RPC_METHOD: "session/prompt",
        }
        attributes.update(self._agent_attributes())
        agent = attributes.get(names.AGENT_NAME)
        name = f"{names.INVOKE_AGENT} {agent}" if agent else names.INVOKE_AGENT
        span = self.tracer.start_span(name, kind=SpanKind.CLIENT, attributes=attributes)
        previous = self.turns.get(session_id)
        if previous is not None:
            previous.end()  # a new prompt while one was running: the old one is over as far as we can tell
        turn = self.turns[session_id] = TurnTrace(self.tracer, span, session_id, self._turn_finished)
        return turn

    def _turn_finished(self, turn: TurnTrace) -> None:
        if self.turns.get(turn.session_id) is turn:
            del self.turns[turn.session_id]
        instrumentation = self.instrumentation
        metric_attributes: dict[str, Any] = {names.OPERATION_NAME: names.INVOKE_AGENT}
        agent = self._agent_attributes().get(names.AGENT_NAME)
        if agent is not None:
            metric_attributes[names.AGENT_NAME] = instrumentation.limits.text(agent)
        instrumentation.turn_duration.record(time.monotonic() - turn.started, metric_attributes)
        if turn.first_chunk is not None:
            instrumentation.first_chunk.record(turn.first_chunk, metric_attributes)
        if turn.usage is not None:
            for kind, count in (("input", turn.usage.input_tokens), ("output", turn.usage.output_tokens)):
                instrumentation.tokens.record(int(count), {**metric_attributes, names.TOKEN_TYPE: kind})

    def permission(
        self, decide: Callable[[RequestPermissionRequest], Awaitable[RequestPermissionResponse]]
    ) -> Callable[[RequestPermissionRequest], Coroutine[Any, Any, RequestPermissionResponse]]:
        """``decide`` wrapped in a span: the question, the time the answer took (a human's, usually) and the
        outcome; under the tool call it asks about, else its session's turn (linked to the agent's trace context
        when the request carried one in ``_meta``), else the agent's trace context (``incoming_parent``)."""

        async def traced(request: RequestPermissionRequest) -> RequestPermissionResponse:
            subject = request.subject
            tool_call_id = subject.tool_call.tool_call_id if isinstance(subject, ToolCallPermissionSubject) else None
            parent, links = incoming_parent(self.turns, request.session_id, tool_call_id, request.meta)
            attributes: dict[str, Any] = {
                names.RPC_SYSTEM: "jsonrpc",
                names.RPC_METHOD: names.SPAN_PERMISSION,
                names.SESSION_ID: request.session_id,
                names.CONVERSATION_ID: request.session_id,
                names.PERMISSION_TITLE: request.title,
            }
            if tool_call_id is not None:
                attributes[names.TOOL_CALL_ID] = tool_call_id
            attributes.update(self._agent_attributes())
            span = self.tracer.start_span(
                names.SPAN_PERMISSION, context=parent, kind=SpanKind.SERVER, attributes=attributes, links=links
            )
            started = time.monotonic()
            try:
                with otel_context_of(span):
                    answer = await decide(request)
            except BaseException as exc:
                _failed(span, exc)
                raise
            span.set_attribute(names.PERMISSION_WAIT, time.monotonic() - started)
            outcome = answer.outcome
            span.set_attribute(names.PERMISSION_OUTCOME, struct_tag(outcome) or "unknown")
            option_id = getattr(outcome, "option_id", None)
            if isinstance(option_id, str):
                span.set_attribute(names.PERMISSION_OPTION_ID, option_id)
                kind = next((o.kind for o in request.options if o.option_id == option_id), None)
                if isinstance(kind, str):
                    span.set_attribute(names.PERMISSION_OPTION_KIND, kind)
            span.end()
            return answer

        return traced


@contextmanager
def otel_context_of(span: Span) -> Iterator[None]:
    """``span`` current for the block (the trace context outgoing requests carry)."""
    token = otel_context.attach(set_span_in_context(span))
    try:
        yield
    finally:
        otel_context.detach(token)


def _failed(span: Span, exc: BaseException) -> None:
    span.record_exception(exc)
    span.set_status(Status(StatusCode.ERROR, str(exc) or type(exc).__name__))
    span.set_attribute(names.ERROR_TYPE, type(exc).__name__)
    if isinstance(exc, RpcError):
        span.set_attribute(names.RPC_ERROR_CODE, exc.code)
    span.end()


def _request_done(span: Span, request: PendingRequest[Any]) -> None:
    try:
        result = request.outcome()
    except Exception as exc:
        _failed(span, exc)
        return
    session_id = getattr(result, "session_id", None)
    if isinstance(session_id, str):
        span.set_attribute(names.SESSION_ID, session_id)
        span.set_attribute(names.CONVERSATION_ID, session_id)
    span.end()
