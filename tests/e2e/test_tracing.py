"""One request, or one ingested document, is one trace across the services it passes through."""

import uuid

import pytest
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from cortex_contracts import subjects
from cortex_messaging.publisher import publish_event
from tests.conftest import Org
from tests.events import IndexedWatcher, upsert_event
from tests.spans import in_trace, new_trace, wait_for_spans

pytestmark = pytest.mark.e2e


def ancestors(span: ReadableSpan, trace: list[ReadableSpan]) -> list[ReadableSpan]:
    """The span's parent, grandparent, ... as far as the recorded spans of its trace reach."""
    by_id = {s.context.span_id: s for s in trace if s.context is not None}
    chain: list[ReadableSpan] = []
    while span.parent is not None and span.parent.span_id in by_id:
        span = by_id[span.parent.span_id]
        chain.append(span)
    return chain


def trace_id(span: ReadableSpan) -> int:
    assert span.context is not None
    found: int = span.context.trace_id
    return found


async def test_a_search_is_one_trace_from_gateway_to_aggregator(org: Org, spans: InMemorySpanExporter) -> None:
    spans.clear()

    response = await org.member.get("/api/memory", params={"q": "anything at all"})
    assert response.status_code == 200, response.text

    (gateway,) = await wait_for_spans(
        spans, lambda s: s.kind is SpanKind.SERVER and (s.attributes or {}).get("http.route") == "/api/memory"
    )
    (aggregator,) = await wait_for_spans(
        spans, lambda s: s.kind is SpanKind.SERVER and s.name == f"{subjects.RPC_AGGREGATOR_FEED} process"
    )
    assert trace_id(aggregator) == trace_id(gateway)
    trace = [s for s in spans.get_finished_spans() if trace_id(s) == trace_id(gateway)]
    chain = ancestors(aggregator, trace)
    assert gateway in chain, [s.name for s in chain]
    assert chain[0].name == f"{subjects.RPC_AGGREGATOR_FEED} request"
    assert chain[0].kind is SpanKind.CLIENT
    assert gateway.parent is None  # the request came in without trace context: the gateway starts the trace


async def test_an_ingested_document_is_one_trace_from_publisher_to_indexer(
    org: Org, js: JetStreamContext, nats_client: NATS, spans: InMemorySpanExporter
) -> None:
    document = uuid.uuid4()
    subject = subjects.kb_document_upserted(org.id)
    watcher = await IndexedWatcher().start(nats_client, org.id)

    with new_trace("test: upstream service") as trace:
        await publish_event(js, subject, upsert_event(org.id, document, title="Traced", body="Follow me.", version=1))
    await watcher.wait_for(document, 1)
    await watcher.stop()

    (publish,) = await wait_for_spans(
        spans, lambda s: in_trace(trace, SpanKind.PRODUCER)(s) and s.name.startswith("kb.")
    )
    (process,) = await wait_for_spans(spans, in_trace(trace, SpanKind.CONSUMER))
    assert publish.name == f"{subject} publish"
    assert process.name == f"{subject} process"
    assert process.parent is not None
    assert publish.context is not None
    assert process.parent.span_id == publish.context.span_id
    assert (process.attributes or {}).get("messaging.consumer.group.name") == "indexer-kb"
    # what the indexer announces afterwards belongs to the same trace, inside its processing
    (announced,) = await wait_for_spans(
        spans, lambda s: in_trace(trace)(s) and s.name == f"{subjects.cortex_document_indexed(org.id)} publish"
    )
    assert process in ancestors(announced, [s for s in spans.get_finished_spans() if trace_id(s) == trace])
