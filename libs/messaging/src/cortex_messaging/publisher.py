"""Publishing events to JetStream: the event id is the dedup id, the trace context rides along."""

from nats.js import JetStreamContext
from nats.js.api import PubAck
from opentelemetry import trace
from opentelemetry.trace import SpanKind

from cortex_contracts.envelope import Envelope
from cortex_messaging.trace_headers import inject

tracer = trace.get_tracer(__name__)


async def publish_event(js: JetStreamContext, subject: str, event: Envelope, *, timeout: float = 5.0) -> PubAck:
    with tracer.start_as_current_span(
        f"{subject} publish",
        kind=SpanKind.PRODUCER,
        attributes={
            "messaging.system": "nats",
            "messaging.destination.name": subject,
            "messaging.message.id": event.id,
        },
    ):
        headers = inject({"Nats-Msg-Id": event.id})
        return await js.publish(subject, event.to_wire(), headers=headers, timeout=timeout)
