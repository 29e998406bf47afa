"""Watching the acknowledgements a JetStream consumer sends, to see which delivery of a message was acked.

A consumer acks by publishing `+ACK` (nats-py: an empty body) to the message's reply subject,
`$JS.ACK.<stream>.<consumer>.<deliveries>.<stream seq>.<consumer seq>.<time>.<pending>` (the newer form
adds a domain and an account hash in front, and a token at the end). A plain NATS subscription on
`$JS.ACK.>` sees them all.
"""

from dataclasses import dataclass
from typing import Any

from nats.aio.client import Client as NATS

V1_TOKENS = 9
V2_TOKENS = 11  # at least; the newest form has one more at the end


@dataclass(frozen=True)
class Ack:
    stream: str
    consumer: str
    deliveries: int  # 1 on the first delivery, 2 on the first redelivery, ...
    stream_seq: int


def parse_ack(subject: str) -> Ack | None:
    tokens = subject.split(".")
    if tokens[:2] != ["$JS", "ACK"]:
        return None
    if len(tokens) == V1_TOKENS:
        stream, consumer, deliveries, stream_seq = tokens[2:6]
    elif len(tokens) >= V2_TOKENS:
        stream, consumer, deliveries, stream_seq = tokens[4:8]
    else:
        return None
    return Ack(stream, consumer, int(deliveries), int(stream_seq))


def is_ack(body: bytes) -> bool:
    return body == b"" or body.startswith(b"+ACK")


class AckLog:
    """Every ack sent for `stream`/`consumer` while started (in-progress, nak and term are not acks)."""

    def __init__(self, stream: str, consumer: str) -> None:
        self._stream = stream
        self._consumer = consumer
        self.acks: list[Ack] = []

    async def start(self, nc: NATS) -> "AckLog":
        async def on_message(msg: Any) -> None:
            ack = parse_ack(msg.subject)
            if ack and (ack.stream, ack.consumer) == (self._stream, self._consumer) and is_ack(msg.data):
                self.acks.append(ack)

        self._subscription = await nc.subscribe("$JS.ACK.>", cb=on_message)
        return self

    async def stop(self) -> None:
        """Stop, after recording every ack the server passed on before now."""
        await self._subscription.drain()  # type: ignore[no-untyped-call]

    def redelivered(self) -> list[Ack]:
        """Acks of a second or later delivery: the message was delivered before and not acked then."""
        return [ack for ack in self.acks if ack.deliveries > 1]
