"""Re-indexing an edited document embeds only the passages whose content changed."""

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cortex_contracts.documents import DocumentUpserted
from cortex_indexer.indexing import EventMeta, IndexingContext, index_document
from cortex_store.database import make_engine, make_sessionmaker
from cortex_store.tenancy import org_transaction
from tests.conftest import Org
from tests.infrastructure import Infrastructure

pytestmark = pytest.mark.e2e

SECTIONS = {
    "Pricing": "Enterprise pricing is negotiated per seat. " * 6,
    "Onboarding": "New engineers get a laptop and a buddy on day one. " * 6,
    "Incidents": "Every incident gets a blameless written review within five days. " * 6,
}


class CountingEmbedder:
    """Records what it is asked to embed; a fake, because what is under test is what the indexer asks."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(self, texts: list[str]) -> list[list[float]]:
        self.asked += texts
        return [[1.0] + [0.0] * 383 for _ in texts]


def _body(sections: dict[str, str]) -> str:
    return "\n\n".join(f"# {heading}\n\n{paragraph}" for heading, paragraph in sections.items())


@pytest.fixture
async def sessions(migrated: Infrastructure) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    engine = make_engine(migrated.app_database_url)
    yield make_sessionmaker(engine)
    await engine.dispose()


async def test_an_edit_embeds_only_the_changed_passage(org: Org, sessions: async_sessionmaker[AsyncSession]) -> None:
    embedder = CountingEmbedder()
    ctx = IndexingContext(sessions=sessions, embed=embedder, consumer=f"test-{uuid.uuid4()}")
    document_id = uuid.uuid4()

    async def index(version: int, sections: dict[str, str]) -> None:
        meta = EventMeta(str(uuid.uuid4()), org.id, None, datetime.now(UTC))
        doc = DocumentUpserted(
            document_id=document_id, organization_id=org.id, title="Handbook", body=_body(sections), version=version
        )
        assert await index_document(ctx, meta, doc, doc.body or "") is not None

    await index(1, SECTIONS)
    first = len(embedder.asked)
    assert first == 3, embedder.asked  # one passage per section

    edited = SECTIONS | {"Onboarding": "New engineers now get two buddies and a laptop. " * 6}
    await index(2, edited)

    assert len(embedder.asked) == first + 1
    assert "two buddies" in embedder.asked[-1]
    async with org_transaction(sessions, org.id) as session:
        embedded = await session.scalar(
            text("SELECT count(*) FROM kb_chunks WHERE document_id = :d AND embedding IS NOT NULL"), {"d": document_id}
        )
    assert embedded == 3  # the two unchanged passages kept their vectors
