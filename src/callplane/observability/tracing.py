"""Optional OpenTelemetry tracing: one trace per call, dial → answer → each turn (recognition,
brain, synthesis, tool) → hang-up → analysis, and a span per webhook attempt.

Installed only with the extra (``pip install 'callplane[tracing]'``) and enabled only by the
standard variables: ``OTEL_TRACES_EXPORTER`` (``otlp`` or ``console``) or an OTLP endpoint
(``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``); ``OTEL_SDK_DISABLED``
and ``OTEL_SERVICE_NAME`` are honoured. Without them nothing is recorded and nothing is sent:
every function here is then a no-op costing a dictionary lookup.

A turn's spans are written when the turn is over, from the times ``turns.py`` measured (so they
are the same numbers the call's events and the histograms hold).
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Coroutine
from datetime import datetime
from typing import Any, TypeVar

T = TypeVar("T")

_tracer: Any = None

ENABLING = (
    "OTEL_TRACES_EXPORTER",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
)


def configure(exporter: Any = None) -> bool:
    """Install a tracer provider when the environment asks for one (or for ``exporter``, in
    tests); True when tracing is on. Safe to call again (the first provider stays)."""
    global _tracer
    if _tracer is not None:
        return True
    if exporter is None and (
        os.environ.get("OTEL_SDK_DISABLED", "").lower() == "true"
        or not any(os.environ.get(name) for name in ENABLING)
        or os.environ.get("OTEL_TRACES_EXPORTER", "").lower() == "none"
    ):
        return False
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    except ImportError:
        return False
    if exporter is not None:
        processor: Any = SimpleSpanProcessor(exporter)
    else:
        processor = BatchSpanProcessor(_exporter_from_env())
    service = os.environ.get("OTEL_SERVICE_NAME") or "callplane"
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(processor)
    trace.set_tracer_provider(provider)
    _tracer = provider.get_tracer("callplane")
    return True


def _exporter_from_env() -> Any:
    kind = os.environ.get("OTEL_TRACES_EXPORTER", "otlp").split(",")[0].strip().lower()
    if kind == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()


def reset() -> None:
    """Forget the tracer (tests)."""
    global _tracer
    _tracer = None


async def traced_call(call_id: Any, work: Coroutine[Any, Any, T]) -> T:
    """Run a call's whole coroutine inside its root span (``engine.worker.Engine.hold``)."""
    if _tracer is None:
        return await work
    with _tracer.start_as_current_span("call", attributes={"callplane.call_id": str(call_id)}):
        return await work


async def traced(name: str, work: Awaitable[T]) -> T:
    """``await work`` inside a span named ``name`` (dial, hang-up, analysis)."""
    if _tracer is None:
        return await work
    with _tracer.start_as_current_span(name):
        return await work


def record_span(name: str, started: float, ended: float, **attributes: Any) -> None:
    """A span written after the fact: ``started`` and ``ended`` are ``time.monotonic()``."""
    if _tracer is None:
        return
    offset = time.time_ns() - time.monotonic_ns()
    span = _tracer.start_span(
        name, start_time=int(started * 1e9) + offset, attributes=attributes or None
    )
    span.end(end_time=int(ended * 1e9) + offset)


def record_wall_span(name: str, started: datetime, seconds: float, **attributes: Any) -> None:
    """A span written after the fact from a wall-clock start (a timezone-aware datetime)."""
    if _tracer is None:
        return
    start = int(started.timestamp() * 1e9)
    span = _tracer.start_span(name, start_time=start, attributes=attributes or None)
    span.end(end_time=start + int(seconds * 1e9))


def record_turn(phases: list[tuple[str, float, float]]) -> None:
    """A turn and its phases (name, start, end in monotonic seconds), under the call's span."""
    if _tracer is None or not phases:
        return
    from opentelemetry import trace

    offset = time.time_ns() - time.monotonic_ns()
    turn = _tracer.start_span("turn", start_time=int(phases[0][1] * 1e9) + offset)
    context = trace.set_span_in_context(turn)
    for name, started, ended in phases:
        child = _tracer.start_span(name, context=context, start_time=int(started * 1e9) + offset)
        child.end(end_time=int(ended * 1e9) + offset)
    turn.end(end_time=int(phases[-1][2] * 1e9) + offset)
