"""The `cortex.<org>.document.indexed` report, staged in the indexing transaction (see outbox)."""

from sqlalchemy.ext.asyncio import AsyncSession

from cortex_contracts import subjects
from cortex_contracts.documents import TYPE_DOCUMENT_INDEXED, DocumentIndexed
from cortex_contracts.envelope import new_envelope
from cortex_indexer.outbox import stage

SOURCE = "cortex/indexer"


def report_id(report: DocumentIndexed) -> str:
    return f"indexed-{report.document_id}-{report.version}"


async def stage_report(session: AsyncSession, report: DocumentIndexed, tenant_id: str | None) -> None:
    event = new_envelope(
        event_type=TYPE_DOCUMENT_INDEXED,
        source=SOURCE,
        org_id=report.organization_id,
        subject=str(report.document_id),
        data=report.model_dump(mode="json", by_alias=True),
        tenant_id=tenant_id,
        event_id=report_id(report),
    )
    await stage(session, subjects.cortex_document_indexed(report.organization_id), event)
