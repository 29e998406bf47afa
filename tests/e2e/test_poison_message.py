"""A message that fails on every delivery: retried, then dead-lettered after `max_deliver` with its reason
and its original headers — and meanwhile, and afterwards, the consumer goes on with other events.

(`test_dead_letters.py` covers malformed events, dead-lettered at once, and the backoff between
deliveries; this adds the original headers of a message that used up its deliveries, and that the
consumer is not held up by it.)
"""

import json
import uuid

import pytest
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from cortex_contracts import subjects
from cortex_messaging.trace_headers import inject
from tests.conftest import Org
from tests.dlq import read_dead_letters
from tests.events import IndexedWatcher, publish_upsert, search_ids, upsert_event
from tests.services import RunningServices
from tests.spans import in_trace, new_trace, wait_handled

pytestmark = pytest.mark.e2e

CONSUMER = "indexer-kb"


async def test_a_message_failing_every_delivery_is_dead_lettered_with_its_headers_and_others_still_flow(
    org: Org, services: RunningServices, js: JetStreamContext, nats_client: NATS, spans: InMemorySpanExporter
) -> None:
    max_deliver = services.indexer.settings.max_deliver
    unknown_org = uuid.uuid4()  # no such organization: every delivery fails (and is retried)
    poison = upsert_event(unknown_org, uuid.uuid4(), title="Orphan", body="Nobody owns me.", version=1)
    subject = subjects.kb_document_upserted(unknown_org)
    request_id = f"req-{uuid.uuid4()}"
    watcher = await IndexedWatcher().start(nats_client, org.id)

    with new_trace("test: a message that always fails") as poison_trace:
        headers = inject({"Nats-Msg-Id": poison.id, "Upstream-Request-Id": request_id})
        await js.publish(subject, poison.to_wire(), headers=headers)
    assert "traceparent" in headers
    (first,) = await wait_handled(spans, poison_trace)
    assert first.status.status_code is StatusCode.ERROR  # failed, to be retried

    # While the poison waits for its next delivery, other events are handled.
    during = uuid.uuid4()
    await publish_upsert(js, upsert_event(org.id, during, title="During the retries", body="Indexed.", version=1))
    await watcher.wait_for(during, 1)
    poison_deliveries = [span for span in spans.get_finished_spans() if in_trace(poison_trace, SpanKind.CONSUMER)(span)]
    assert 1 <= len(poison_deliveries) < max_deliver

    (letter,) = await read_dead_letters(js, unknown_org, 1, timeout=40)

    assert letter.headers["Cortex-Dlq-Reason"] == "max_deliver exceeded"
    assert letter.headers["Cortex-Dlq-Deliveries"] == str(max_deliver)
    assert letter.headers["Cortex-Dlq-Error"] == f"UnknownOrganization: no organization {unknown_org} (yet)"
    assert letter.record["reason"] == "max_deliver exceeded"
    assert letter.record["deliveries"] == max_deliver
    assert letter.record["consumer"] == CONSUMER
    assert letter.record["subject"] == subject
    # The original headers: all of them in the record, and on the dead letter itself all but the event's dedup
    # id, which is the letter's own: the failed message's stream and sequence.
    assert letter.record["headers"] == headers
    assert letter.headers["Upstream-Request-Id"] == request_id
    assert letter.headers["traceparent"] == headers["traceparent"]
    assert letter.headers["Nats-Msg-Id"].startswith("cortex-dlq-KB/")
    assert letter.record["payload"].encode() == poison.to_wire()
    assert json.loads(letter.record["payload"])["id"] == poison.id
    assert len(await wait_handled(spans, poison_trace, count=max_deliver)) == max_deliver

    # And after it, too.
    after = uuid.uuid4()
    await publish_upsert(js, upsert_event(org.id, after, title="After the dead letter", body="Indexed.", version=1))
    await watcher.wait_for(after, 1)
    await watcher.stop()
    assert set(await search_ids(org.member)) == {str(during), str(after)}
