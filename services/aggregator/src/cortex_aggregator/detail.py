"""One item in full: body, metadata, provenance, and citations both ways — all within one organization."""

from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cortex_aggregator import items
from cortex_contracts.rpc import ItemDetail, ItemRequest, Provenance, Ref, UploadRef
from cortex_store.database import driver_connection
from cortex_store.tenancy import org_transaction

DOCUMENT = text("""
SELECT body, status, tags, version, upload_id, failure_reason, embedded FROM kb_documents
WHERE organization_id = :org AND id = :id AND deleted_at IS NULL
""")
TEAMS = text("""
SELECT t.id, t.name AS title FROM team_resources tr
JOIN teams t ON t.id = tr.team_id AND t.organization_id = tr.organization_id AND t.deleted_at IS NULL
WHERE tr.organization_id = :org AND tr.resource_type = 'work' AND tr.resource_id = :work AND tr.deleted_at IS NULL
ORDER BY t.name, t.id
""")
UPLOAD = text("SELECT id, filename, media_type, size_bytes FROM kb_uploads WHERE organization_id = :org AND id = :id")
CITES = text("""
SELECT d.id, d.title FROM kb_citations c
JOIN kb_documents d ON d.id = c.cited_id AND d.organization_id = c.organization_id
WHERE c.organization_id = :org AND c.citing_id = :id AND d.deleted_at IS NULL ORDER BY d.title, d.id
""")
CITED_BY = text("""
SELECT d.id, d.title FROM kb_citations c
JOIN kb_documents d ON d.id = c.citing_id AND d.organization_id = c.organization_id
WHERE c.organization_id = :org AND c.cited_id = :id AND d.deleted_at IS NULL ORDER BY d.title, d.id
""")


class ItemNotFound(LookupError):
    pass


def _refs(rows: Any) -> list[Ref]:
    return [Ref(id=row.id, title=row.title) for row in rows]


async def item_detail(sessions: async_sessionmaker[AsyncSession], request: ItemRequest) -> ItemDetail:
    org, doc_id = request.organization_id, request.document_id
    # One snapshot: the title and the body, status and version are read by different statements, and a
    # new version committed between them would otherwise show half old, half new.
    async with org_transaction(sessions, org, one_snapshot=True) as session:
        rows = await items.rows_by_id(await driver_connection(session), org, [doc_id])
        document = (await session.execute(DOCUMENT, {"org": org, "id": doc_id})).first()
        if doc_id not in rows or document is None:
            raise ItemNotFound(str(doc_id))
        row = rows[doc_id]
        teams = _refs(await session.execute(TEAMS, {"org": org, "work": row.work_id})) if row.work_id else []
        upload = None
        if document.upload_id:
            upload = (await session.execute(UPLOAD, {"org": org, "id": document.upload_id})).first()
        cites = _refs(await session.execute(CITES, {"org": org, "id": doc_id}))
        cited_by = _refs(await session.execute(CITED_BY, {"org": org, "id": doc_id}))
    provenance = Provenance(
        work=Ref(id=row.work_id, title=row.work_title) if row.work_id and row.work_title is not None else None,
        mission=Ref(id=row.mission_id, title=row.mission_title) if row.mission_title is not None else None,
        teams=teams,
        upload=UploadRef(
            id=upload.id, filename=upload.filename, media_type=upload.media_type, size_bytes=upload.size_bytes
        )
        if upload
        else None,
        agent_id=row.agent_id,
        agent_run_id=row.agent_run_id,
    )
    return ItemDetail(
        item=items.to_item(row, items.shorten(row.body_head)),
        body=document.body,
        status=document.status,
        tags=list(document.tags),
        version=document.version,
        provenance=provenance,
        cites=cites,
        cited_by=cited_by,
        failure_reason=document.failure_reason,
        embedded=document.embedded,
    )
