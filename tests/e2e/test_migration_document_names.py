"""Migration 0026 trims the titles, classes and sources already stored, as the contracts trim new ones."""

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
INSERT INTO kb_documents (id, organization_id, scope, title, doc_class, status, source, tags, body, content_hash,
                          version, updated_at)
VALUES (:id, :org, 'org', :title, :doc_class, 'published', :source, '{}', 'body', 'h', 1, now())
"""
BIND = "SELECT set_config('cortex.organization_id', :org, true)"
FORCED = "SELECT relforcerowsecurity FROM pg_class WHERE relname = 'kb_documents'"


@pytest.fixture
async def database(migrated: Infrastructure) -> AsyncIterator[str]:
    async with own_database(migrated.database_url, "cx_names", "0025") as name:
        yield on_database(migrated.database_url, name)


async def test_stored_titles_classes_and_sources_are_trimmed(database: str) -> None:
    org = uuid.uuid4()
    stored = {
        uuid.uuid4(): (" Padded\n", "  spec ", " wiki\t"),
        uuid.uuid4(): ("\u200b ", "", "   "),
        uuid.uuid4(): ("Plain", None, "kb"),
    }
    engine = make_engine(database, pool_size=1)
    try:
        async with engine.begin() as connection:
            await connection.execute(text(BIND), {"org": str(org)})  # row-level security is forced
            await connection.execute(
                text("INSERT INTO organizations (id, slug, name) VALUES (:o, :s, 'x')"), {"o": org, "s": str(org)}
            )
            for document, (title, doc_class, source) in stored.items():
                names = {"title": title, "doc_class": doc_class, "source": source}
                await connection.execute(text(DOCUMENT), {"id": document, "org": org, **names})

        await upgrade_async(database, "0026")

        async with engine.begin() as connection:
            await connection.execute(text(BIND), {"org": str(org)})
            rows = (await connection.execute(text("SELECT id, title, doc_class, source FROM kb_documents"))).all()
            forced = await connection.scalar(text(FORCED))
    finally:
        await engine.dispose()
    padded, blank, plain = stored
    assert {row.id: (row.title, row.doc_class, row.source) for row in rows} == {
        padded: ("Padded", "spec", "wiki"),
        blank: ("untitled", None, "kb"),
        plain: ("Plain", None, "kb"),
    }
    assert forced is True
