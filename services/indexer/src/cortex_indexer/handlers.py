"""Entry point for `kb.>` events: validate the payload, call the indexing function."""

import logging
from typing import TypeVar

from nats.js import JetStreamContext
from pydantic import ValidationError

from cortex_contracts import subjects
from cortex_contracts.documents import (
    DocumentDeleted,
    DocumentIndexed,
    DocumentUpserted,
)
from cortex_contracts.uploads import UploadCreated
from cortex_indexer import repository
from cortex_indexer.extraction_workers import ExtractionWorkers
from cortex_indexer.indexing import EventMeta, IndexingContext, delete_document, index_document
from cortex_indexer.object_bodies import read_body
from cortex_indexer.tenant_guard import refuse_cross_tenant_writes
from cortex_indexer.uploads import index_upload
from cortex_messaging.delivery import Delivery, Handler, PoisonMessage, RecordedFailure, brief

log = logging.getLogger(__name__)

EXTRACTION_FAILED = "extraction failed"


Payload = TypeVar("Payload", DocumentUpserted, DocumentDeleted, UploadCreated)


def _payload(model: type[Payload], delivery: Delivery) -> Payload:
    try:
        return model.from_wire(delivery.event.data)
    except ValidationError as exc:
        raise PoisonMessage(f"invalid {delivery.event.type} payload: {brief(exc)}") from exc


def event_meta(delivery: Delivery) -> EventMeta:
    event = delivery.event
    return EventMeta(
        inbox_key=repository.inbox_key(event.orgid, event.id),
        organization_id=event.orgid,
        tenant_id=event.tenantid,
        time=event.time,
    )


def make_kb_handler(ctx: IndexingContext, js: JetStreamContext, extraction: ExtractionWorkers) -> Handler:
    @refuse_cross_tenant_writes
    async def handle(delivery: Delivery) -> RecordedFailure | None:
        meta = event_meta(delivery)
        result: DocumentIndexed | None
        failure_reason = None
        if delivery.action == subjects.DOCUMENT_UPSERTED:
            doc = _payload(DocumentUpserted, delivery)
            body = doc.body if doc.body_ref is None else await read_body(js, doc.body_ref, owner=meta.organization_id)
            result = await index_document(ctx, meta, doc, body or "")
        elif delivery.action == subjects.DOCUMENT_DELETED:
            result = await delete_document(ctx, meta, _payload(DocumentDeleted, delivery))
        elif delivery.action == subjects.UPLOAD_CREATED:
            upload = await index_upload(
                ctx, js, extraction, meta, _payload(UploadCreated, delivery), final=delivery.final
            )
            result, failure_reason = upload.indexed, upload.failure_reason
        else:
            raise PoisonMessage(f"unknown event {delivery.action!r} on {delivery.subject}")
        if result is not None:
            log.info("indexed document %s v%d (%d chunks)", result.document_id, result.version, result.chunks)
        return RecordedFailure(reason=EXTRACTION_FAILED, error=failure_reason) if failure_reason else None

    return handle
