"""Opt-in OpenTelemetry instrumentation (the ``otel`` extra: ``opentelemetry-api`` only).

Imported only by ``ClientBuilder.instrument()``: an application that never calls it never loads OpenTelemetry.
What is emitted (spans, attributes, metrics) is listed in docs/observability.md and ``names``.
"""

from __future__ import annotations

from .context import link_from_meta, with_trace_context
from .instrumentation import ConnectionTelemetry, Instrumentation

__all__ = ["ConnectionTelemetry", "Instrumentation", "link_from_meta", "with_trace_context"]
