"""The transactional outbox: stage an event inside the handler's transaction, send it after the commit.

If the process dies between commit and send, the relay's sweep sends what is left (each copy of the
indexer sweeps; `SKIP LOCKED` keeps them from sending one row twice at once, and the message id
dedups any repeat inside JetStream's window).
"""

import asyncio
import contextlib
import logging

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
TAKE = text("DELETE FROM outbox WHERE message_id = :id RETURNING subject, message_id, payload")
SWEEP = text("""
DELETE FROM outbox WHERE id IN (
    SELECT id FROM outbox WHERE created_at < now() - make_interval(secs => :age) ORDER BY id LIMIT 100
    FOR UPDATE SKIP LOCKED
) RETURNING subject, message_id, payload
""")


async def stage(session: AsyncSession, subject: str, event: Envelope) -> None:
    """Write the event in the caller's transaction; `OutboxRelay.send(event.id)` sends it after the commit."""
    await session.execute(STAGE, {"subject": subject, "id": event.id, "payload": event.to_wire()})


class OutboxRelay:
    def __init__(self, sessions: async_sessionmaker[AsyncSession], js: JetStreamContext) -> None:
        self._sessions = sessions
        self._js = js

    async def send(self, message_id: str) -> None:
        """Send a staged event now; its row goes only if the publish succeeded (same transaction)."""
        async with self._sessions() as session, session.begin():
            for row in await session.execute(TAKE, {"id": message_id}):
                await self._publish(row.subject, row.message_id, row.payload)

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
        """Send what a crashed (or slow) handler left behind, until `stop` is set."""
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), every_seconds)
            try:
                async with self._sessions() as session, session.begin():
                    rows = list(await session.execute(SWEEP, {"age": min_age_seconds}))
                    for row in rows:
                        await self._publish(row.subject, row.message_id, row.payload)
                if rows:
                    log.info("outbox: sent %d event(s) left behind", len(rows))
            except Exception:
                log.exception("outbox sweep failed")
