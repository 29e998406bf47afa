"""The transactional outbox: stage an event inside the handler's transaction, send it after the commit.

The handler sends the event it staged straight from memory once its transaction has committed, and the
relay deletes sent rows in batches, one statement per sweep. A row still there after `min_age_seconds`
was never sent — the process died between commit and send, or the publish failed — and the sweep sends
it. Each copy of the indexer sweeps; `SKIP LOCKED` keeps copies from sending one row twice at once, and
the message id makes JetStream drop any repeat inside its duplicate window (a row sent but not yet
deleted when its process died is sent again, and dropped).
"""

import asyncio
import contextlib
import logging
from dataclasses import dataclass

from nats.js import JetStreamContext
from opentelemetry import trace
from opentelemetry.trace import SpanKind
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cortex_contracts.envelope import Envelope
from cortex_messaging.trace_headers import inject

log = logging.getLogger(__name__)
tracer = trace.get_tracer(__name__)

STAGE = text("INSERT INTO outbox (subject, message_id, payload) VALUES (:subject, :id, :payload)")
FORGET = text("DELETE FROM outbox WHERE message_id = ANY(CAST(:ids AS text[]))")
SWEEP = text("""
DELETE FROM outbox WHERE id IN (
    SELECT id FROM outbox WHERE created_at < now() - make_interval(secs => :age) ORDER BY id LIMIT 100
    FOR UPDATE SKIP LOCKED
) RETURNING subject, message_id, payload
""")


@dataclass(frozen=True)
class OutboxMessage:
    subject: str
    message_id: str
    payload: bytes

    @classmethod
    def of(cls, subject: str, event: Envelope) -> "OutboxMessage":
        return cls(subject, event.id, event.to_wire())


async def stage(session: AsyncSession, message: OutboxMessage) -> None:
    """Write the event in the caller's transaction; `OutboxRelay.send(message)` sends it after the commit."""
    await session.execute(STAGE, {"subject": message.subject, "id": message.message_id, "payload": message.payload})


class OutboxRelay:
    def __init__(self, sessions: async_sessionmaker[AsyncSession], js: JetStreamContext) -> None:
        self._sessions = sessions
        self._js = js
        self._sent: list[str] = []  # message ids whose rows the next sweep deletes

    async def send(self, message: OutboxMessage) -> None:
        """Send a staged event whose transaction has committed. If this fails, the sweep sends it later."""
        await self._publish(message.subject, message.message_id, message.payload)
        self._sent.append(message.message_id)

    async def _publish(self, subject: str, message_id: str, payload: bytes) -> None:
        with tracer.start_as_current_span(
            f"{subject} publish",
            kind=SpanKind.PRODUCER,
            attributes={
                "messaging.system": "nats",
                "messaging.destination.name": subject,
                "messaging.message.id": message_id,
            },
        ):
            await self._js.publish(subject, payload, headers=inject({"Nats-Msg-Id": message_id}))

    async def sweep(self, stop: asyncio.Event, every_seconds: float = 5.0, min_age_seconds: float = 10.0) -> None:
        """Until `stop` is set: delete the rows of sent events, and send what was left behind."""
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), every_seconds)
            try:
                await self.forget_sent()
                async with self._sessions() as session, session.begin():
                    rows = list(await session.execute(SWEEP, {"age": min_age_seconds}))
                    for row in rows:
                        await self._publish(row.subject, row.message_id, row.payload)
                if rows:
                    log.info("outbox: sent %d event(s) left behind", len(rows))
            except Exception:
                log.exception("outbox sweep failed")

    async def finish(self) -> None:
        """Once nothing sends any more (the consumers have stopped): delete the rows of what was sent, else the
        next start's sweep sends them again. Before (QA 46), the sweep's last pass ran while the consumers still
        finished their events, and the rows of those were left."""
        try:
            await self.forget_sent()
        except Exception as exc:  # noqa: BLE001 - stopping: the next start's sweep sends them, and JetStream drops them
            log.warning("outbox: %d sent event(s) left to the next start's sweep: %r", len(self._sent), exc)

    async def forget_sent(self) -> None:
        """Delete the rows of the events sent so far, in one statement."""
        sent, self._sent = self._sent, []
        if not sent:
            return
        try:
            async with self._sessions() as session, session.begin():
                await session.execute(FORGET, {"ids": sent})
        except Exception:
            self._sent = sent + self._sent  # kept for the next sweep
            raise
