"""Migration 0027 folds passages stored with decomposed accents to NFC, and writes their BM25 postings anew:
afterwards they are stored exactly as the indexer stores the same document today."""

import unicodedata
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import asyncpg
import pytest

from cortex_indexer.chunking import Chunk, chunk_document
from cortex_indexer.outbox import OutboxMessage
from cortex_indexer.repository import DocumentWrite, Passage, write_document
from cortex_store.database import asyncpg_dsn
from cortex_store.migrate import upgrade_async
from tests.infrastructure import Infrastructure
from tests.own_database import on_database, own_database

pytestmark = pytest.mark.e2e

TITLE = "Café notes"
# Two passages under one heading (it counts in the first only), then another heading.
BODY = "# Crème brûlée\n\n" + "déjà vu au café, naïve résumé " * 60 + "\n\n## Über\n\nZürich façade, Ångström."
PASSAGES = "SELECT ordinal, heading, text, content_hash, token_count FROM kb_chunks WHERE document_id = $1 ORDER BY 1"
POSTINGS = """
SELECT c.ordinal, p.lexeme, p.tf, p.document_tokens FROM kb_postings p JOIN kb_chunks c ON c.id = p.chunk_id
WHERE p.document_id = $1 ORDER BY 1, 2
"""


def nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


@pytest.fixture
async def database(migrated: Infrastructure) -> AsyncIterator[str]:
    async with own_database(migrated.database_url, "cx_nfc", "0026") as name:
        yield on_database(migrated.database_url, name)


async def _write(connection: asyncpg.Connection, org: uuid.UUID, chunks: list[Chunk]) -> uuid.UUID:
    document = uuid.uuid4()
    now = datetime.now(UTC)
    columns = {
        "id": document, "organization_id": org, "scope": "org", "title": TITLE, "status": "published",
        "source": "kb", "tags": [], "body": BODY, "content_hash": "h", "version": 1, "embedded": False,
        "updated_at": now, "last_indexed_at": now,
    }  # fmt: skip
    passages = [Passage(chunk.heading, chunk.text, chunk.content_hash, None) for chunk in chunks]
    report = OutboxMessage("cortex.test", str(document), b"{}")
    write = DocumentWrite("test", str(document), columns, passages, [], None, None, report)
    assert await write_document(connection, write)
    return document


async def _stored(connection: asyncpg.Connection, document: uuid.UUID) -> dict[str, Any]:
    return {
        "passages": [tuple(row) for row in await connection.fetch(PASSAGES, document)],
        "postings": [tuple(row) for row in await connection.fetch(POSTINGS, document)],
        "tokens": await connection.fetchval("SELECT token_count FROM kb_documents WHERE id = $1", document),
    }


async def test_decomposed_passages_are_stored_as_the_indexer_stores_them_now(database: str) -> None:
    org = uuid.uuid4()
    chunks = chunk_document(TITLE, BODY)
    assert len(chunks) >= 3 and len({chunk.heading for chunk in chunks}) < len(chunks)
    # As the chunker stored them before it folded to NFC.
    decomposed = [Chunk(chunk.ordinal, nfd(chunk.heading), nfd(chunk.text)) for chunk in chunks]
    connection = await asyncpg.connect(asyncpg_dsn(database))
    try:
        async with connection.transaction():
            await connection.execute("SELECT set_config('cortex.organization_id', $1, true)", str(org))
            await connection.execute("INSERT INTO organizations (id, slug, name) VALUES ($1, $2, 'x')", org, str(org))
        old, today = await _write(connection, org, decomposed), await _write(connection, org, chunks)
        plain = await _write(connection, org, chunk_document("Plain", "Nothing to fold in this one."))
        await connection.execute("SELECT set_config('cortex.organization_id', $1, false)", str(org))
        before = await _stored(connection, old), await _stored(connection, plain)
        assert before[0]["postings"] != (await _stored(connection, today))["postings"]
        # Token counts are written anew too: this cluster's parser counts a combining mark as part of its word,
        # so folding keeps them here, but a parser that splits at the mark counts otherwise.
        await connection.execute("UPDATE kb_chunks SET token_count = 0 WHERE document_id = $1", old)
        await connection.execute("UPDATE kb_documents SET token_count = 0 WHERE id = $1", old)

        await upgrade_async(database, "0027")

        after = await _stored(connection, old), await _stored(connection, plain)
        assert after[0] == await _stored(connection, today)
        assert after[1] == before[1]
        forced = "SELECT bool_and(relforcerowsecurity) FROM pg_class WHERE relname = ANY($1)"
        assert await connection.fetchval(forced, ["kb_documents", "kb_chunks", "kb_postings"]) is True
    finally:
        await connection.close()
