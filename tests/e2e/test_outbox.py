"""The outbox relay on real NATS and PostgreSQL: a sent event's row goes with the next sweep, and an event
staged but never sent (its process died after the commit) is sent by the sweep."""

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cortex_cli.organizations import ensure_membership
from cortex_contracts import subjects
from cortex_contracts.documents import TYPE_DOCUMENT_INDEXED
from cortex_contracts.envelope import new_envelope
from cortex_embedding.batcher import BatchingEmbedder
from cortex_embedding.openai_compatible import OpenAICompatibleEmbedder, OpenAIEmbedderSettings
from cortex_indexer.bootstrap import Indexer
from cortex_indexer.outbox import OutboxMessage, OutboxRelay, stage
from cortex_indexer.settings import IndexerSettings
from cortex_store.database import make_engine, make_sessionmaker
from cortex_store.models import MemberRole
from tests.embedding_server import FakeEmbeddingServer, Slow
from tests.events import IndexedWatcher, publish_upsert, upsert_event
from tests.infrastructure import Infrastructure
from tests.own_database import on_database, own_database, scalar
from tests.own_nats import own_nats_client
from tests.services import service_running

pytestmark = pytest.mark.e2e


@pytest.fixture
async def sessions(migrated: Infrastructure) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    engine = make_engine(migrated.app_database_url)
    yield make_sessionmaker(engine)
    await engine.dispose()


def _message(organization_id: uuid.UUID) -> OutboxMessage:
    event = new_envelope(
        event_type=TYPE_DOCUMENT_INDEXED,
        source="test",
        org_id=organization_id,
        subject="outbox",
        data={"test": True},
        event_id=f"outbox-test-{uuid.uuid4()}",
    )
    return OutboxMessage.of(subjects.cortex_document_indexed(organization_id), event)


async def _staged(sessions: async_sessionmaker[AsyncSession], *messages: OutboxMessage) -> int:
    async with sessions() as session:
        count = await session.scalar(
            text("SELECT count(*) FROM outbox WHERE message_id = ANY(:ids)"), {"ids": [m.message_id for m in messages]}
        )
    return int(count or 0)


async def test_sent_rows_go_and_a_row_left_behind_is_swept(
    sessions: async_sessionmaker[AsyncSession], nats_client: NATS, js: JetStreamContext
) -> None:
    organization_id = uuid.uuid4()
    received: list[str] = []

    async def on_message(msg: Msg) -> None:
        received.append(msg.headers["Nats-Msg-Id"] if msg.headers else "")

    subscription = await nats_client.subscribe(subjects.cortex_document_indexed(organization_id), cb=on_message)
    relay = OutboxRelay(sessions, js)
    sent, left_behind = _message(organization_id), _message(organization_id)
    async with sessions() as session, session.begin():
        await stage(session, sent)
        await stage(session, left_behind)

    await relay.send(sent)  # as a handler does once its transaction committed; `left_behind` never is
    assert await _staged(sessions, sent, left_behind) == 2
    await relay.forget_sent()
    assert await _staged(sessions, sent) == 0
    assert await _staged(sessions, left_behind) == 1

    stop = asyncio.Event()
    sweeping = asyncio.create_task(relay.sweep(stop, every_seconds=0.1, min_age_seconds=0))
    try:
        async with asyncio.timeout(10):
            while await _staged(sessions, left_behind):
                await asyncio.sleep(0.1)
            while len(received) < 2:
                await asyncio.sleep(0.05)
    finally:
        stop.set()
        await sweeping
        await subscription.unsubscribe()
    assert sorted(received) == sorted([sent.message_id, left_behind.message_id])


async def test_a_clean_stop_leaves_no_row_of_an_event_sent_while_stopping(migrated: Infrastructure) -> None:
    """The consumers finish their events after the sweep's last pass: their rows went to the next start's sweep,
    which sent them again (QA 46). The embedder answers slowly, so that events are in flight at the stop."""
    fake = FakeEmbeddingServer(dimension=32).start()
    fake.script.extend([Slow(0.5)] * 100)
    settings = OpenAIEmbedderSettings.model_validate(
        {"base_url": fake.base_url, "model": "fake-slow", "dimension": 32, "timeout_seconds": 10}
    )
    try:
        async with (
            own_database(migrated.database_url, "cx_outbox_stop") as name,
            own_nats_client("tests-outbox-stop") as nc,
        ):
            owner = on_database(migrated.database_url, name)
            org_id = await ensure_membership(owner, "outbox-stop", "alice", MemberRole.ADMIN, create=True)
            url = nc.connected_url
            assert url is not None
            indexer = Indexer(
                settings=IndexerSettings(
                    database_url=on_database(migrated.app_database_url, name), nats_url=url.geturl(), concurrency=4
                ),
                embedder=BatchingEmbedder(OpenAICompatibleEmbedder(settings)),
            )
            watcher = await IndexedWatcher().start(nc, org_id)
            documents = [uuid.uuid4() for _ in range(12)]
            async with service_running(indexer):
                for document in documents:
                    event = upsert_event(org_id, document, title="Note", body=f"Body {document}.", version=1)
                    await publish_upsert(nc.jetstream(), event)
                async with asyncio.timeout(60):
                    while not watcher.seen:
                        await asyncio.sleep(0.05)
            await watcher.stop()
            left = await scalar(owner, "SELECT count(*) FROM outbox")
    finally:
        fake.stop()
    assert 0 < len(watcher.seen) < len(documents)  # stopped with events still to do
    assert left == 0
