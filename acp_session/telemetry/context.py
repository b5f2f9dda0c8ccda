"""W3C trace context in ``_meta``: the root keys ``traceparent``, ``tracestate`` and ``baggage`` that the Meta
Propagation RFD reserves. Outgoing requests carry the current span's context; an agent request's context is read
back, so its span can link to the agent's trace.

Always the W3C propagators, never the globally configured one: the RFD reserves exactly these keys, and another
format (B3, Jaeger) would put keys into ``_meta`` that agents do not know.
"""

from __future__ import annotations

from typing import Any

import msgspec
from opentelemetry.baggage.propagation import W3CBaggagePropagator
from opentelemetry.context import Context
from opentelemetry.propagators.composite import CompositePropagator
from opentelemetry.trace import Link, get_current_span
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

__all__ = ["META_KEYS", "link_from_meta", "with_trace_context"]

META_KEYS = ("traceparent", "tracestate", "baggage")
_PROPAGATOR = CompositePropagator([TraceContextTextMapPropagator(), W3CBaggagePropagator()])


def with_trace_context(method: str, params: Any) -> Any:
    """``params`` with the current span's context added to ``_meta`` (``Connection.request_params_hook``).

    Keys the caller set in ``_meta`` itself win. Without a recording span, or for params that are not a JSON
    object, the params go out unchanged."""
    if not get_current_span().get_span_context().is_valid:
        return params
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier)
    if not carrier:
        return params
    try:
        body = msgspec.json.decode(params) if isinstance(params, msgspec.Raw) else msgspec.to_builtins(params)
    except (TypeError, msgspec.DecodeError, msgspec.EncodeError):
        return params
    if body is None:
        body = {}
    if not isinstance(body, dict):
        return params
    meta = body.get("_meta")
    merged = {**carrier, **meta} if isinstance(meta, dict) else carrier
    return {**body, "_meta": merged}


def context_from_meta(meta: Any) -> Context | None:
    """The trace context an agent put into a message's ``_meta``, or None when there is none (or it is bad)."""
    if not isinstance(meta, dict) or not isinstance(meta.get("traceparent"), str):
        return None
    carrier = {key: meta[key] for key in META_KEYS if isinstance(meta.get(key), str)}
    return _PROPAGATOR.extract(carrier)


def link_from_meta(meta: Any) -> list[Link]:
    """A link to the span named by ``_meta``'s ``traceparent`` (empty when there is no valid one)."""
    context = context_from_meta(meta)
    if context is None:
        return []
    span_context = get_current_span(context).get_span_context()
    return [Link(span_context)] if span_context.is_valid else []
