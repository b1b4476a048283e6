"""Optional tracing (issue 29): with the ``tracing`` extra and an exporter configured, one call
is one trace (dial, each turn and its phases, hang-up, analysis) and each webhook attempt a
span; without configuration nothing is recorded."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from callplane.observability import tracing
from tests.conftest import client_for
from tests.engine_support import create_call, engine_app, wait_for_event
from tests.factories import make_org
from tests.llm_stub import StubLLM
from tests.webhook_receiver import receiver

pytest.importorskip("opentelemetry.sdk")
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    tracing.reset()
    assert tracing.configure(exporter=exporter)
    yield exporter
    tracing.reset()


def test_nothing_is_traced_unless_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    tracing.reset()
    for name in (*tracing.ENABLING, "OTEL_SDK_DISABLED"):
        monkeypatch.delenv(name, raising=False)
    assert not tracing.configure()
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    assert not tracing.configure()
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    assert not tracing.configure()


async def test_a_call_is_one_trace(make_app: Any, spans: InMemorySpanExporter) -> None:
    with StubLLM(replies=["Of course.", "Goodbye!"]) as brain:
        app = await engine_app(
            make_app,
            simulated_call_seconds=2,
            simulated_script=["Can I book a table?"],
            llm_base_url=brain.base_url,
            llm_model="stub-model",
            webhook_allow_private_networks=True,
        )
        org = await make_org(app)
        async with receiver() as hooks, client_for(app) as client:
            hook = await client.post(
                "/v1/webhooks",
                json={"url": hooks.url, "events": ["call.ended"]},
                headers=org.headers,
            )
            assert hook.status_code == 201
            call_id = await create_call(client, org, "+14155550150", first_message="Hello!")
            await wait_for_event(client, org, call_id, "call.analyzed", within=20)
            await hooks.wait_for(1)
            await wait_for_webhook_span(spans)
    finished = spans.get_finished_spans()
    [call] = [s for s in finished if s.name == "call"]
    assert call.attributes is not None and call.attributes["callplane.call_id"] == call_id
    trace_id = call.context.trace_id
    in_call = {s.name for s in finished if s.context.trace_id == trace_id}
    assert {"call", "dial", "turn", "hang-up", "analysis"} <= in_call
    assert {"end_of_turn", "recognition", "first_token", "first_audio"} <= in_call
    turn = next(s for s in finished if s.name == "turn")
    assert turn.parent is not None and turn.parent.span_id == call.context.span_id
    webhook = next(s for s in finished if s.name == "webhook")
    assert webhook.attributes is not None and webhook.attributes["outcome"] == "delivered"


async def wait_for_webhook_span(spans: InMemorySpanExporter) -> None:
    import asyncio

    for _ in range(200):
        if any(s.name == "webhook" for s in spans.get_finished_spans()):
            return
        await asyncio.sleep(0.05)
