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
from cortex_indexer.ann_admission import ENTER
from cortex_store.database import make_engine, make_sessionmaker
from cortex_store.tenancy import org_transaction
from tests.conftest import Org
from tests.events import IndexedWatcher, publish_upsert, upsert_event
from tests.infrastructure import Infrastructure
from tests.reads import reads_of

pytestmark = pytest.mark.e2e

BODIES = {
    "Pricing": "Enterprise pricing is negotiated per seat, with discounts for annual commitments.",
    "Onboarding": "New engineers get a laptop, a buddy and a week of pairing on day one.",
    "Incidents": "Every incident gets a written review within five days, blameless and public.",
}
Q = "how is enterprise pricing negotiated"
DEPTH = 100  # what a first page asks each leg for


async def admit(sessions: async_sessionmaker[AsyncSession], org: Org) -> None:
    """Into the HNSW graph whatever its size, as the indexer admits a big organization: it may walk."""
    async with sessions() as session, session.begin():
        assert await session.scalar(ENTER, {"org": org.id, "min_chunks": 0})


@pytest.fixture
async def sessions(migrated: Infrastructure) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    engine = make_engine(migrated.app_database_url)
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
    await admit(sessions, org)
    model = load_local_embedder(threads=1)
    assert model is not None
    vector = model.embed([Q])[0]
    where = document_filter(FeedFilters())

    async with org_transaction(sessions, org.id) as session:
        reads = await reads_of(session)
        corpus = await CorpusStats().of(reads, org.id)
        lexical = await retrieval.lexical_hits(reads, org.id, Q, where, DEPTH, corpus)
        exact = await retrieval.dense_hits(reads, org.id, vector, where, DEPTH, exact=True)
        together = await retrieval.hybrid_hits(reads, org.id, Q, vector, where, DEPTH, corpus, exact=True)
        # The walk must use the HNSW index (a tiny table would otherwise be scanned). It returns this
        # org's 3 of the 100 asked for at most — short — so the exact scan answers after it.
        await session.execute(text("SET LOCAL enable_seqscan = off"))
        walked = await retrieval.hybrid_hits(reads, org.id, Q, vector, where, DEPTH, corpus, exact=False)

    assert lexical and lexical[0].document_id == ids["Pricing"]
    assert {hit.document_id for hit in exact} == set(ids.values())
    assert exact[0].document_id == ids["Pricing"]
    assert together == (lexical, exact)
    assert walked == (lexical, exact)


CRANE_SENTENCES = [
    "The harbor crane cable is greased every Monday before the first ship.",
    "Grease the crane's cable weekly, and log it in the harbor book.",
    "Our port cranes need their wire ropes lubricated once a week.",
    "Cable lubrication for the quay crane happens on the night shift.",
    "Harbor maintenance: crane brakes tested, cable greased, hooks inspected.",
    "The gantry crane at berth four gets fresh grease on its hoist rope.",
    "Every crane operator checks the cable for wear and adds grease.",
    "Ship-to-shore cranes are serviced monthly, cables greased each week.",
    "A dry crane cable frays: the harbor team greases it on schedule.",
    "The container crane's rope drum and cable get greased on Fridays.",
    "Port engineering keeps a grease log for every crane cable in the harbor.",
    "Mobile harbor cranes have their cables lubricated after heavy rain.",
]


async def test_a_walk_whose_nearest_chunks_crowd_into_few_documents_still_fills_the_page(
    org: Org, js: JetStreamContext, nats_client: NATS, sessions: async_sessionmaker[AsyncSession]
) -> None:
    """Twelve documents of ten near-identical passages each: the 30 nearest chunks (3 × the 10 documents
    asked) belong to about three documents. The exact scan over as many chunks is as short; a wider
    HNSW walk finds ten."""
    watcher = await IndexedWatcher().start(nats_client, org.id)
    ids = [uuid.uuid4() for _ in CRANE_SENTENCES]
    for number, (doc, sentence) in enumerate(zip(ids, CRANE_SENTENCES, strict=True)):
        body = "\n\n".join([" ".join([sentence] * 9)] * 10)  # ten passages, all but the first the same
        await publish_upsert(js, upsert_event(org.id, doc, title=f"Crane {number}", body=body, version=1))
    for doc in ids:
        await watcher.wait_for(doc, 1)
    await watcher.stop()
    await admit(sessions, org)
    model = load_local_embedder(threads=1)
    assert model is not None
    vector = model.embed(["when is the harbor crane cable greased"])[0]
    where = document_filter(FeedFilters())

    async with org_transaction(sessions, org.id) as session:
        reads = await reads_of(session)
        scanned = await retrieval.dense_hits(reads, org.id, vector, where, 10, exact=True)
        await session.execute(text("SET LOCAL enable_seqscan = off"))  # walk the graph, as for a big org
        walked = await retrieval.dense_hits(reads, org.id, vector, where, 10, exact=False)

    assert len(scanned) < 10  # what answered a short walk before
    assert len(walked) == 10
    assert {hit.document_id for hit in scanned} <= {hit.document_id for hit in walked}
