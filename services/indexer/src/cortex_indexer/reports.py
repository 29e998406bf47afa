"""The `cortex.<org>.document.indexed` report, staged in the indexing transaction (see outbox)."""

from cortex_contracts import subjects
from cortex_contracts.documents import TYPE_DOCUMENT_INDEXED, DocumentIndexed
from cortex_contracts.envelope import new_envelope
from cortex_indexer.outbox import OutboxMessage

SOURCE = "cortex/indexer"


def report_id(report: DocumentIndexed) -> str:
    return f"indexed-{report.document_id}-{report.version}"


def report_message(report: DocumentIndexed, tenant_id: str | None) -> OutboxMessage:
    event = new_envelope(
        event_type=TYPE_DOCUMENT_INDEXED,
        source=SOURCE,
        org_id=report.organization_id,
        subject=str(report.document_id),
        data=report.model_dump(mode="json", by_alias=True),
        tenant_id=tenant_id,
        event_id=report_id(report),
    )
    return OutboxMessage.of(subjects.cortex_document_indexed(report.organization_id), event)
