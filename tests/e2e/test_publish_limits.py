"""An event too large for NATS is refused by the publisher, and the connection stays up.

nats-py checks a message's payload alone against the server's max_payload; the headers it adds (the dedup
id, the trace context) could tip it over, and the server then closed the connection — which nats-py does
not open again, so every later publish of that process failed.
"""

import uuid

import pytest
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext

from cortex_contracts import subjects
from cortex_contracts.envelope import Envelope, new_envelope
from cortex_messaging.publisher import MessageTooLarge, message_bytes, publish_event
from cortex_messaging.trace_headers import inject

pytestmark = pytest.mark.e2e


def _event(org: uuid.UUID, text: str) -> Envelope:
    return new_envelope(event_type="test.padding", source="tests", org_id=org, data={"text": text})


async def test_an_event_over_max_payload_with_its_headers_is_refused_and_the_connection_stays_up(
    nats_client: NATS, js: JetStreamContext
) -> None:
    org = uuid.uuid4()
    subject = subjects.kb_document_upserted(org)
    empty = _event(org, "")
    # A payload just under the limit, so nats-py's own check lets it through: only its headers are too many.
    overhead = len(empty.to_wire())
    event = _event(org, "x" * (nats_client.max_payload - overhead - 10))
    assert len(event.to_wire()) < nats_client.max_payload
    assert message_bytes(event.to_wire(), inject({"Nats-Msg-Id": event.id})) > nats_client.max_payload

    with pytest.raises(MessageTooLarge):
        await publish_event(js, subject, event)

    assert nats_client.is_connected
    ack = await publish_event(js, subject, _event(org, "small"))
    assert ack.seq > 0
