"""What an agent's text may put into a trace: every string bounded and cleaned on its way to OpenTelemetry.

An agent chooses tool names and titles, permission titles, ids and error messages, and a title may quote a
command line with a token in it (``curl -H "Authorization: Bearer ..."``); exported as they are, an 8 MiB title
becomes an 8 MiB span attribute and the token lands in the tracing backend. So the instrumentation's tracer is
wrapped (``BoundedTracer``): each span name, attribute, status description and recorded exception passes through
``AttributeLimits.text``, which takes out what looks like a credential (``redact_secrets``, shared with the remote
transport's redaction) and cuts what is longer than ``max_length``; the title attributes can be left out.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, Span, SpanContext, SpanKind, Status, Tracer
from opentelemetry.util import types

from ..transport.remote.redact import redact_secrets
from . import names

__all__ = ["DEFAULT_MAX_ATTRIBUTE_LENGTH", "TITLE_ATTRIBUTES", "AttributeLimits", "BoundedSpan", "BoundedTracer"]

DEFAULT_MAX_ATTRIBUTE_LENGTH = 1024
"""Characters a string attribute, span name or status description keeps (``instrument(max_attribute_length=)``)."""
TITLE_ATTRIBUTES = frozenset({names.TOOL_TITLE, names.PERMISSION_TITLE})
"""The attributes ``instrument(titles=False)`` leaves out: free text the agent writes for the user."""
_MARGIN = 256  # cleaned with this much beyond the cut, so a token across the cut is still seen whole
_CUT = "…"
_STACKTRACE = "exception.stacktrace"


@dataclass(frozen=True)
class AttributeLimits:
    """How long a string in a trace may be, and whether titles go in at all."""

    max_length: int = DEFAULT_MAX_ATTRIBUTE_LENGTH
    titles: bool = True

    def __post_init__(self) -> None:
        if self.max_length < 16:
            raise ValueError(f"max_attribute_length must be at least 16, not {self.max_length}")

    def text(self, value: str, limit: int | None = None) -> str:
        """``value`` without what looks like a credential, cut to ``limit`` (``max_length``) characters."""
        limit = limit or self.max_length
        cleaned = redact_secrets(value[: limit + _MARGIN])
        if len(cleaned) <= limit and len(value) <= limit + _MARGIN:
            return cleaned
        return cleaned[: limit - len(_CUT)] + _CUT

    def value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
            return [self.text(item) if isinstance(item, str) else item for item in value]
        return value

    def attributes(self, attributes: types.Attributes) -> dict[str, Any] | None:
        if not attributes:
            return None
        return {key: self.value(value) for key, value in attributes.items() if self.keeps(key)}

    def keeps(self, key: str) -> bool:
        return self.titles or key not in TITLE_ATTRIBUTES

    def exception_attributes(self, exception: BaseException) -> dict[str, str]:
        """What ``record_exception`` records, bounded: the message, and the stack trace's last frames (it ends
        with the message, so that is cleaned too)."""
        message = self.text(str(exception))
        frames = "".join(traceback.format_tb(exception.__traceback__))
        stack = f"{frames}{type(exception).__qualname__}: {message}"
        limit = 8 * self.max_length
        if len(stack) > limit:
            stack = _CUT + stack[len(stack) - limit + len(_CUT) :]
        return {"exception.message": message, _STACKTRACE: stack}


class BoundedSpan(Span):
    """A span whose every string goes through ``AttributeLimits`` (the rest is the wrapped span's)."""

    def __init__(self, span: Span, limits: AttributeLimits) -> None:
        self.span = span
        self.limits = limits

    def end(self, end_time: int | None = None) -> None:
        self.span.end(end_time)

    def get_span_context(self) -> SpanContext:
        return self.span.get_span_context()

    def is_recording(self) -> bool:
        return self.span.is_recording()

    def set_attributes(self, attributes: Mapping[str, types.AttributeValue]) -> None:
        self.span.set_attributes(self.limits.attributes(attributes) or {})

    def set_attribute(self, key: str, value: types.AttributeValue) -> None:
        if self.limits.keeps(key):
            self.span.set_attribute(key, self.limits.value(value))

    def add_event(self, name: str, attributes: types.Attributes = None, timestamp: int | None = None) -> None:
        self.span.add_event(self.limits.text(name), self.limits.attributes(attributes), timestamp)

    def add_link(self, context: SpanContext, attributes: types.Attributes = None) -> None:
        self.span.add_link(context, self.limits.attributes(attributes))

    def update_name(self, name: str) -> None:
        self.span.update_name(self.limits.text(name))

    def set_status(self, status: Status | trace.StatusCode, description: str | None = None) -> None:
        if isinstance(status, Status):
            text = status.description
            status = Status(status.status_code, None if text is None else self.limits.text(text))
        elif description is not None:
            description = self.limits.text(description)
        self.span.set_status(status, description)

    def record_exception(
        self,
        exception: BaseException,
        attributes: types.Attributes = None,
        timestamp: int | None = None,
        escaped: bool = False,
    ) -> None:
        bounded = {**self.limits.exception_attributes(exception), **(self.limits.attributes(attributes) or {})}
        self.span.record_exception(exception, bounded, timestamp, escaped)


class BoundedTracer(Tracer):
    """The instrumentation's tracer: the given one, with every span it starts a ``BoundedSpan``."""

    def __init__(self, tracer: Tracer, limits: AttributeLimits) -> None:
        self.tracer = tracer
        self.limits = limits

    def start_span(
        self,
        name: str,
        context: Context | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: types.Attributes = None,
        links: Sequence[Link] | None = None,
        start_time: int | None = None,
        record_exception: bool = True,
        set_status_on_exception: bool = True,
    ) -> Span:
        limits = self.limits
        span = self.tracer.start_span(
            limits.text(name),
            context,
            kind,
            limits.attributes(attributes),
            links,
            start_time,
            record_exception,
            set_status_on_exception,
        )
        return BoundedSpan(span, limits)

    @contextmanager
    def start_as_current_span(  # type: ignore[override]  # the API's own context manager type is private
        self,
        name: str,
        context: Context | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: types.Attributes = None,
        links: Sequence[Link] | None = None,
        start_time: int | None = None,
        record_exception: bool = True,
        set_status_on_exception: bool = True,
        end_on_exit: bool = True,
    ) -> Iterator[Span]:
        span = self.start_span(
            name, context, kind, attributes, links, start_time, record_exception, set_status_on_exception
        )
        with trace.use_span(
            span,
            end_on_exit=end_on_exit,
            record_exception=record_exception,
            set_status_on_exception=set_status_on_exception,
        ) as current:
            yield current
