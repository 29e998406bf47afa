"""Both search legs in one statement give what each leg gives alone, HNSW walk or exact scan."""

import uuid
from collections.abc import AsyncIterator

import pytest
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cortex_aggregator import retrieval
from cortex_aggregator.corpus_stats import CorpusStats
from cortex_aggregator.filters import document_filter
from cortex_contracts.rpc import FeedFilters
from cortex_embedding.local_model import load_local_embedder
from cortex_store.database import make_engine, make_sessionmaker
from cortex_store.tenancy import org_transaction
from tests.conftest import Org
from tests.events import IndexedWatcher, publish_upsert, upsert_event
from tests.infrastructure import Infrastructure

pytestmark = pytest.mark.e2e

BODIES = {
    "Pricing": "Enterprise pricing is negotiated per seat, with discounts for annual commitments.",
    "Onboarding": "New engineers get a laptop, a buddy and a week of pairing on day one.",
    "Incidents": "Every incident gets a written review within five days, blameless and public.",
}
Q = "how is enterprise pricing negotiated"
DEPTH = 100  # what a first page asks each leg for


@pytest.fixture
async def sessions(migrated: Infrastructure) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    engine = make_engine(migrated.app_database_url, server_settings=retrieval.CONNECTION_SETTINGS)
    yield make_sessionmaker(engine)
    await engine.dispose()


async def test_one_statement_equals_each_leg_alone_exact_or_walking_the_graph_first(
    org: Org, js: JetStreamContext, nats_client: NATS, sessions: async_sessionmaker[AsyncSession]
) -> None:
    watcher = await IndexedWatcher().start(nats_client, org.id)
    ids = {title: uuid.uuid4() for title in BODIES}
    for title, body in BODIES.items():
        await publish_upsert(js, upsert_event(org.id, ids[title], title=title, body=body, version=1))
    for doc in ids.values():
        await watcher.wait_for(doc, 1)
    await watcher.stop()
    model = load_local_embedder(threads=1)
    assert model is not None
    vector = model.embed([Q])[0]
    where = document_filter(FeedFilters())

    async with org_transaction(sessions, org.id) as session:
        corpus = await CorpusStats().of(session, org.id)
        lexical = await retrieval.lexical_hits(session, org.id, Q, where, DEPTH, corpus)
        exact = await retrieval.dense_hits(session, org.id, vector, where, DEPTH, exact=True)
        together = await retrieval.hybrid_hits(session, org.id, Q, vector, where, DEPTH, corpus, exact=True)
        # The walk must use the HNSW index (a tiny table would otherwise be scanned). It returns this
        # org's 3 of the 100 asked for at most — short — so the exact scan answers after it.
        await session.execute(text("SET LOCAL enable_seqscan = off"))
        walked = await retrieval.hybrid_hits(session, org.id, Q, vector, where, DEPTH, corpus, exact=False)

    assert lexical and lexical[0].document_id == ids["Pricing"]
    assert {hit.document_id for hit in exact} == set(ids.values())
    assert exact[0].document_id == ids["Pricing"]
    assert together == (lexical, exact)
    assert walked == (lexical, exact)
