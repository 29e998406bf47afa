"""Migration 0028 folds the document classes already stored, as the contracts fold new ones (lower case, NFC)."""

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
INSERT INTO kb_documents (id, organization_id, scope, title, doc_class, status, source, body, content_hash, version,
                          updated_at)
VALUES (:id, :org, 'org', 'doc', :doc_class, 'published', 'kb', 'body', 'h', 1, now())
"""
FORCED = "SELECT relforcerowsecurity FROM pg_class WHERE relname = 'kb_documents'"


@pytest.fixture
async def database(migrated: Infrastructure) -> AsyncIterator[str]:
    async with own_database(migrated.database_url, "cx_classcase", "0027") as name:
        yield on_database(migrated.database_url, name)


async def test_stored_classes_are_folded(database: str) -> None:
    org = uuid.uuid4()
    stored = {uuid.uuid4(): "Runbook", uuid.uuid4(): "runbook", uuid.uuid4(): "E\u0301TUDE", uuid.uuid4(): None}
    engine = make_engine(database, pool_size=1)
    try:
        async with engine.begin() as connection:
            # The owner binds the organization, as the services do: row-level security is forced.
            await connection.execute(text("SELECT set_config('cortex.organization_id', :org, true)"), {"org": str(org)})
            await connection.execute(
                text("INSERT INTO organizations (id, slug, name) VALUES (:o, :s, 'x')"), {"o": org, "s": str(org)}
            )
            for document, doc_class in stored.items():
                await connection.execute(text(DOCUMENT), {"id": document, "org": org, "doc_class": doc_class})

        await upgrade_async(database, "0028")

        async with engine.begin() as connection:
            await connection.execute(text("SELECT set_config('cortex.organization_id', :org, true)"), {"org": str(org)})
            rows = (await connection.execute(text("SELECT id, doc_class FROM kb_documents"))).all()
            forced = await connection.scalar(text(FORCED))
    finally:
        await engine.dispose()
    folded = {row.id: row.doc_class for row in rows}
    assert [folded[document] for document in stored] == ["runbook", "runbook", "\u00e9tude", None]
    assert forced is True
