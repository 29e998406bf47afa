"""Publishing events to JetStream: the event id is the dedup id, the trace context rides along."""

from nats.js import JetStreamContext
from nats.js.api import PubAck
from opentelemetry import trace
from opentelemetry.trace import SpanKind

from cortex_contracts.envelope import Envelope
from cortex_messaging.connection import refuse_while_reconnecting
from cortex_messaging.trace_headers import inject

tracer = trace.get_tracer(__name__)


class MessageTooLarge(ValueError):
    """The event with its headers is larger than the NATS server takes in one message."""


def message_bytes(payload: bytes, headers: dict[str, str]) -> int:
    """What the server counts against its max_payload, headers framed as nats-py frames them:
    `NATS/1.0\\r\\n`, then `key: value\\r\\n` each, then `\\r\\n`."""
    return len(payload) + 12 + sum(len(key.encode()) + len(value.encode()) + 4 for key, value in headers.items())


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
        payload = event.to_wire()
        # nats-py checks the payload alone; a message whose headers tip it over the limit makes the server
        # close the connection, and nats-py does not open it again: every later publish would fail.
        refuse_while_reconnecting(js._nc)
        size, limit = message_bytes(payload, headers), js._nc.max_payload
        if size > limit:
            raise MessageTooLarge(f"the event is {size:,} bytes; NATS takes {limit:,}")
        return await js.publish(subject, payload, headers=headers, timeout=timeout)
