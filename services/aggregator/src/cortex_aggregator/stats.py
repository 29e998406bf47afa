"""Headline numbers of an organization's memory."""

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cortex_contracts.rpc import Stats, StatsRequest
from cortex_store.tenancy import org_transaction

# Works counted as the Work facet shows them: every Work a document names, in the catalog or not (yet).
DOCUMENT_STATS = text("""
SELECT count(*) FILTER (WHERE d.status <> 'failed') AS documents, count(*) FILTER (WHERE d.status = 'failed') AS failed,
       count(DISTINCT d.work_id) AS works, max(d.last_indexed_at) AS last_indexed_at
FROM kb_documents d
WHERE d.organization_id = :org AND d.deleted_at IS NULL
""")
MEMORY_ENTRIES = text("SELECT count(*) FROM memory_entry WHERE organization_id = :org")


async def stats(sessions: async_sessionmaker[AsyncSession], request: StatsRequest) -> Stats:
    async with org_transaction(sessions, request.organization_id) as session:
        row = (await session.execute(DOCUMENT_STATS, {"org": request.organization_id})).one()
        entries = int(await session.scalar(MEMORY_ENTRIES, {"org": request.organization_id}) or 0)
    # Concepts arrive with the synthesizer (not built yet): none exist.
    return Stats(
        documents_indexed=row.documents,
        documents_failed=row.failed,
        concepts_synthesized=0,
        works_covered=row.works,
        memory_entries=entries,
        last_indexed_at=row.last_indexed_at,
    )
