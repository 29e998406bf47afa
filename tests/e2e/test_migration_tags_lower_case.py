"""Migration 0022 folds the tags already stored, as the contracts fold new ones (lower case, NFC)."""

import uuid
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import text

from cortex_store.database import make_engine
from cortex_store.migrate import upgrade_async
from tests.infrastructure import Infrastructure
from tests.own_database import on_database, own_database

pytestmark = pytest.mark.e2e

DOCUMENT = """
INSERT INTO kb_documents (id, organization_id, scope, title, status, source, tags, body, content_hash, version,
                          updated_at)
VALUES (:id, :org, 'org', 'doc', 'published', 'kb', :tags, 'body', 'h', 1, now())
"""
FORCED = "SELECT bool_and(relforcerowsecurity) FROM pg_class WHERE relname IN ('kb_documents', 'kb_document_tags')"
TAG_ROW = "INSERT INTO kb_document_tags (organization_id, tag, document_id) VALUES (:org, :tag, :id)"


@pytest.fixture
async def database(migrated: Infrastructure) -> AsyncIterator[str]:
    async with own_database(migrated.database_url, "cx_tagcase", "0021") as name:
        yield on_database(migrated.database_url, name)


async def test_stored_tags_are_folded_and_their_rows_follow(database: str) -> None:
    org, mixed, plain = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    stored = {mixed: ["Billing", "ops", "billing", "CAF\u00c9"], plain: ["ops"]}
    engine = make_engine(database, pool_size=1)
    try:
        async with engine.begin() as connection:
            # The owner binds the organization, as the services do: row-level security is forced.
            await connection.execute(text("SELECT set_config('cortex.organization_id', :org, true)"), {"org": str(org)})
            await connection.execute(
                text("INSERT INTO organizations (id, slug, name) VALUES (:o, :s, 'x')"), {"o": org, "s": str(org)}
            )
            for document, tags in stored.items():
                await connection.execute(text(DOCUMENT), {"id": document, "org": org, "tags": tags})
                for tag in dict.fromkeys(tags):
                    await connection.execute(text(TAG_ROW), {"org": org, "tag": tag, "id": document})

        await upgrade_async(database, "0022")

        async with engine.begin() as connection:
            await connection.execute(text("SELECT set_config('cortex.organization_id', :org, true)"), {"org": str(org)})
            documents = (await connection.execute(text("SELECT id, tags FROM kb_documents"))).all()
            folded: dict[uuid.UUID, list[str]] = {row.id: row.tags for row in documents}
            rows = (await connection.execute(text("SELECT document_id, tag FROM kb_document_tags ORDER BY 1, 2"))).all()
            forced = await connection.scalar(text(FORCED))
    finally:
        await engine.dispose()
    assert folded == {mixed: ["billing", "ops", "caf\u00e9"], plain: ["ops"]}
    assert sorted(rows) == sorted([(mixed, "billing"), (mixed, "ops"), (mixed, "caf\u00e9"), (plain, "ops")])
    assert forced is True
