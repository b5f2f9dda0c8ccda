"""In-memory OpenTelemetry providers for the telemetry tests (the SDK is in the dev extra only)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from acp_session import ClientBuilder

REFERENCE = [sys.executable, "-m", "acp_conformance.agent"]


@dataclass
class Telemetry:
    tracer_provider: TracerProvider
    meter_provider: MeterProvider
    spans: InMemorySpanExporter
    metrics: InMemoryMetricReader

    def finished(self) -> list[ReadableSpan]:
        return list(self.spans.get_finished_spans())

    def named(self, prefix: str) -> list[ReadableSpan]:
        return [span for span in self.finished() if span.name.startswith(prefix)]

    def children(self, parent: ReadableSpan) -> list[ReadableSpan]:
        assert parent.context is not None
        return [s for s in self.finished() if s.parent is not None and s.parent.span_id == parent.context.span_id]

    def metric_points(self, name: str) -> list[Any]:
        data = self.metrics.get_metrics_data()
        points: list[Any] = []
        for resource in data.resource_metrics if data is not None else []:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == name:
                        points.extend(metric.data.data_points)
        return points


def traced_builder(telemetry: Telemetry, answer: Any = None) -> ClientBuilder:
    """A client builder instrumented with ``telemetry``'s providers; ``answer`` answers permission requests."""
    builder = ClientBuilder("traced", "1.0").instrument(telemetry.tracer_provider, telemetry.meter_provider)
    return builder if answer is None else builder.on_request_permission(answer)


def in_memory() -> Telemetry:
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    return Telemetry(tracer_provider, MeterProvider(metric_readers=[reader]), spans, reader)
