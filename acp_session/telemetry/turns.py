"""One prompt turn as a span: from ``session/prompt`` to the idle state that ends it, with a child span per tool
call. It listens to the session's updates only while the turn runs (a listener on the session's track), so a
connection without instrumentation folds its updates exactly as before.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer, set_span_in_context

from ..errors import RpcError
from ..rpc import PendingRequest
from ..schema.types import UpdateSessionNotification
from ..session import SentRequest, SessionTrack
from . import names

__all__ = ["TurnTrace", "struct_tag"]

_CHUNK_TAGS = frozenset({"agent_message_chunk", "agent_thought_chunk", "agent_message", "agent_thought"})
_TOOL_ENDS = frozenset({"completed", "failed", "cancelled"})


def struct_tag(value: Any) -> str:
    """A tagged struct's tag: an update's ``sessionUpdate``, an outcome's ``outcome`` ("" if it has none)."""
    config = getattr(type(value), "__struct_config__", None)
    tag = getattr(config, "tag", None)
    return tag if isinstance(tag, str) else ""


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


class TurnTrace:
    """The span of one turn and its tool calls; called with each update of its session (an ``UpdateListener``)."""

    def __init__(
        self,
        tracer: Tracer,
        span: Span,
        session_id: str,
        finished: Callable[[TurnTrace], None],
    ) -> None:
        self.tracer = tracer
        self.span = span
        self.session_id = session_id
        self._finished = finished
        self.started = time.monotonic()
        self.first_chunk: float | None = None
        self.chunks = 0
        self.updates = 0
        self.tools: dict[str, Span] = {}
        self._tool_started: dict[str, float] = {}
        self._tool_count = 0
        self.stop_reason: str | None = None
        self.usage: Any = None
        self._answered = False
        self._idle = False
        self.ended = False
        self.remove_listener: Callable[[], None] | None = None

    @property
    def context(self) -> Context:
        return set_span_in_context(self.span)

    @contextmanager
    def sending(self) -> Iterator[None]:
        """The turn's span current while the prompt is sent (so it carries the trace context); a failure to
        send ends the turn."""
        token = otel_context.attach(self.context)
        try:
            yield
        except BaseException as exc:
            self.answered(exc)
            raise
        finally:
            otel_context.detach(token)

    def follow(self, track: SessionTrack, request: SentRequest[Any]) -> None:
        """Listen to the session's updates until the turn ends, and to the prompt's answer."""
        track.listeners.append(self)
        self.remove_listener = track.unlisten_fn(self)
        request.add_done_callback(self._answer_in)

    def _answer_in(self, request: PendingRequest[Any]) -> None:
        try:
            request.outcome()
        except Exception as exc:
            self.answered(exc)
        else:
            self.answered(None)

    def span_for_tool(self, tool_call_id: str | None) -> Span:
        """The span a question about ``tool_call_id`` belongs under: that tool call's, else the turn's."""
        tool = self.tools.get(tool_call_id or "")
        return self.span if tool is None else tool

    # -- updates ----------------------------------------------------------------------------------------------

    def __call__(self, note: UpdateSessionNotification) -> None:
        if self.ended or note.session_id != self.session_id:
            return  # a subagent's update reaches its parent's listeners; it is not this turn's
        self.updates += 1
        update: Any = note.update
        tag = struct_tag(update)
        if tag in _CHUNK_TAGS:
            self.chunks += 1
            if self.first_chunk is None:
                self.first_chunk = time.monotonic() - self.started
        elif tag == "tool_call_update" or tag == "tool_call":
            self._tool(update)
        elif tag == "state_update" and getattr(update, "state", None) == "idle":
            self.stop_reason = _text(getattr(update, "stop_reason", None))
            usage = getattr(update, "usage", None)
            self.usage = usage if hasattr(usage, "input_tokens") else None
            message = getattr(getattr(update, "error", None), "message", None)
            if isinstance(message, str):
                self.span.set_status(Status(StatusCode.ERROR, message))
            self._idle = True
            if self._answered:
                self.end()
        elif tag == "usage_update":
            self.span.set_attribute(names.CONTEXT_USED, int(update.used))
            self.span.set_attribute(names.CONTEXT_SIZE, int(update.size))

    def _tool(self, update: Any) -> None:
        tool_call_id = _text(getattr(update, "tool_call_id", None))
        if tool_call_id is None:
            return
        span = self.tools.get(tool_call_id)
        if span is None:
            if self._tool_count >= 1024:
                return  # an agent inventing endless ids cannot grow the turn
            self._tool_count += 1
            name = _text(getattr(update, "name", None))
            span = self.tracer.start_span(
                f"{names.EXECUTE_TOOL} {name}" if name else names.EXECUTE_TOOL,
                context=self.context,
                kind=SpanKind.INTERNAL,
                attributes={
                    names.OPERATION_NAME: names.EXECUTE_TOOL,
                    names.TOOL_CALL_ID: tool_call_id,
                    names.SESSION_ID: self.session_id,
                },
            )
            self.tools[tool_call_id] = span
            self._tool_started[tool_call_id] = time.monotonic()
        for field, attribute in (
            ("name", names.TOOL_NAME),
            ("title", names.TOOL_TITLE),
            ("kind", names.TOOL_KIND),
            ("status", names.TOOL_STATUS),
        ):
            value = _text(getattr(update, field, None))
            if value is not None:
                span.set_attribute(attribute, value)
        status = _text(getattr(update, "status", None))
        if status in _TOOL_ENDS:
            self._end_tool(tool_call_id, status)

    def _end_tool(self, tool_call_id: str, status: str | None) -> None:
        span = self.tools.pop(tool_call_id)
        if status == "failed":
            span.set_status(Status(StatusCode.ERROR, "the tool call failed"))
        span.set_attribute(names.TOOL_DURATION, time.monotonic() - self._tool_started.pop(tool_call_id))
        span.end()

    # -- the prompt's answer ------------------------------------------------------------------------------------

    def answered(self, error: BaseException | None) -> None:
        """``session/prompt`` was answered: a failure ends the turn now; an answer ends it with the idle state
        (already seen, or still to come: v2 agents report it after answering)."""
        if error is not None:
            self.span.record_exception(error)
            self.span.set_status(Status(StatusCode.ERROR, str(error)))
            self.span.set_attribute(names.ERROR_TYPE, type(error).__name__)
            if isinstance(error, RpcError):
                self.span.set_attribute(names.RPC_ERROR_CODE, error.code)
            self.end()
            return
        self._answered = True
        if self._idle:
            self.end()

    def end(self) -> None:
        if self.ended:
            return
        self.ended = True
        span = self.span
        for tool_call_id in list(self.tools):
            self._end_tool(tool_call_id, None)  # still running when the turn ended
        span.set_attribute(names.CHUNKS, self.chunks)
        span.set_attribute(names.UPDATES, self.updates)
        span.set_attribute(names.TOOL_CALLS, self._tool_count)
        if self.first_chunk is not None:
            span.set_attribute(names.TIME_TO_FIRST_CHUNK, self.first_chunk)
        if self.stop_reason is not None:
            span.set_attribute(names.STOP_REASON, self.stop_reason)
            span.set_attribute(names.FINISH_REASONS, [self.stop_reason])
        usage = self.usage
        if usage is not None:
            span.set_attribute(names.USAGE_INPUT_TOKENS, int(usage.input_tokens))
            span.set_attribute(names.USAGE_OUTPUT_TOKENS, int(usage.output_tokens))
            span.set_attribute(names.TOTAL_TOKENS, int(usage.total_tokens))
            thought = getattr(usage, "thought_tokens", None)
            if isinstance(thought, int):
                span.set_attribute(names.THOUGHT_TOKENS, thought)
        span.end()
        if self.remove_listener is not None:
            self.remove_listener()
        self._finished(self)
