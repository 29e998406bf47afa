"""Headline numbers of an organization's memory."""

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cortex_contracts.rpc import Stats, StatsRequest
from cortex_store.tenancy import org_transaction

# Works counted as the Work facet shows them: every Work a document names, in the catalog or not (yet).
DOCUMENT_STATS = text("""
SELECT count(*) FILTER (WHERE d.status <> 'failed') AS documents, count(*) FILTER (WHERE d.status = 'failed') AS failed,
       count(*) FILTER (WHERE d.status <> 'failed' AND NOT d.embedded) AS lexical_only,
       count(DISTINCT d.work_id) AS works, max(d.last_indexed_at) AS last_indexed_at
FROM kb_documents d
WHERE d.organization_id = :org AND d.deleted_at IS NULL
""")
MEMORY_ENTRIES = text("""
SELECT count(*) AS entries, count(*) FILTER (WHERE embedding IS NULL) AS lexical_only
FROM memory_entry WHERE organization_id = :org
""")


async def stats(sessions: async_sessionmaker[AsyncSession], request: StatsRequest) -> Stats:
    async with org_transaction(sessions, request.organization_id) as session:
        row = (await session.execute(DOCUMENT_STATS, {"org": request.organization_id})).one()
        entries = (await session.execute(MEMORY_ENTRIES, {"org": request.organization_id})).one()
    # Concepts arrive with the synthesizer (not built yet): none exist.
    return Stats(
        documents_indexed=row.documents,
        documents_failed=row.failed,
        concepts_synthesized=0,
        works_covered=row.works,
        memory_entries=entries.entries,
        documents_lexical_only=row.lexical_only,
        memory_entries_lexical_only=entries.lexical_only,
        last_indexed_at=row.last_indexed_at,
    )
