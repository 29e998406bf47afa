"""`POST /api/memory/documents`: an admin adds an org note; it is published as a KB event like any other."""

import asyncio
import json
import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Query
from fastapi.responses import JSONResponse
from nats.errors import TimeoutError as NatsTimeoutError
from pydantic import BaseModel, ConfigDict, Field, field_validator

from cortex_contracts import subjects
from cortex_contracts.base import NO_NUL, is_blank
from cortex_contracts.doc_classes import DOC_CLASSES
from cortex_contracts.documents import MAX_BODY_CHARS, TYPE_DOCUMENT_UPSERTED, DocumentUpserted, Tag, class_key
from cortex_contracts.envelope import Envelope, new_envelope
from cortex_contracts.rpc import ItemReply, ItemRequest
from cortex_gateway.aggregator_client import ask_aggregator
from cortex_gateway.auth import AdminDep, Caller, ResourcesDep
from cortex_gateway.event_ids import event_id
from cortex_gateway.idempotency import document_for_key
from cortex_gateway.json_body import UNSUPPORTED_MEDIA_TYPE, json_content
from cortex_gateway.problems import Problem
from cortex_gateway.resources import Resources
from cortex_gateway.routes.responses import ERRORS, problem
from cortex_messaging.buckets import stored_if_large
from cortex_messaging.publisher import publish_event

router = APIRouter(prefix="/api/memory", tags=["memory"])

NOTE_SOURCE = "note"


class NoteCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    title: str = Field(min_length=1, max_length=300, pattern=NO_NUL, description="1–300 characters.")
    body: str | None = Field(
        default=None, max_length=MAX_BODY_CHARS, pattern=NO_NUL, description="Markdown, at most 1 MiB."
    )
    doc_class: str | None = Field(default=None, alias="docClass", description=f"One of: {', '.join(DOC_CLASSES)}.")
    tags: list[Tag] = Field(default_factory=list, max_length=32, description="At most 32 tags of ≤ 64 characters.")

    @field_validator("title")
    @classmethod
    def _title_has_text(cls, title: str) -> str:
        if is_blank(title):
            raise ValueError("title must not be blank")
        return title.strip()

    @field_validator("doc_class")
    @classmethod
    def _known_class(cls, doc_class: str | None) -> str | None:
        if doc_class is None:
            return None
        if class_key(doc_class) not in DOC_CLASSES:
            raise ValueError(f"docClass must be one of {', '.join(DOC_CLASSES)}")
        return class_key(doc_class)


class Created(BaseModel):
    id: uuid.UUID


async def _note_event(res: Resources, caller: Caller, note: NoteCreate, document_id: uuid.UUID) -> Envelope:
    # Named by the document alone: a retry puts the same body under the same name.
    body_ref = await stored_if_large(res.buckets, caller.organization_id, f"{document_id}/note", note.body or "")
    payload = DocumentUpserted(
        document_id=document_id,
        organization_id=caller.organization_id,
        title=note.title,
        body=None if body_ref else note.body or "",
        body_ref=body_ref,
        doc_class=note.doc_class,
        tags=note.tags,
        source=NOTE_SOURCE,
        version=1,
    )
    return new_envelope(
        event_type=TYPE_DOCUMENT_UPSERTED,
        source="cortex/gateway",
        org_id=caller.organization_id,
        subject=str(document_id),
        data=payload.model_dump(mode="json", by_alias=True, exclude_none=True),
        tenant_id=caller.tenant_id,
        event_id=event_id(res.settings.secret.get_secret_value(), "note", caller.organization_id, document_id),
    )


async def _already_indexed(res: Resources, caller: Caller, document_id: uuid.UUID) -> bool:
    try:
        await ask_aggregator(
            res,
            subjects.RPC_AGGREGATOR_ITEM,
            ItemRequest(organization_id=caller.organization_id, document_id=document_id),
            ItemReply,
        )
    except Problem as exc:
        if exc.status == 404:
            return False
        raise
    return True


async def _publish(res: Resources, caller: Caller, event: Envelope, document_id: uuid.UUID, *, keyed: bool) -> None:
    """Publish the note's event. NATS may have stored a message whose acknowledgement did not come in time: a
    plain retry, with a new id, could then add the note twice, so the answer names the id and says so.
    `keyed`: the request has an Idempotency-Key, whose retry is the same note."""
    try:
        await publish_event(res.js, subjects.kb_document_upserted(caller.organization_id), event)
    except NatsTimeoutError as exc:
        detail = f"NATS did not confirm note {document_id} in time: it may have been stored all the same. " + (
            "Send the request again with the same Idempotency-Key: it adds nothing new."
            if keyed
            else "Look for it before adding it again (an Idempotency-Key makes such a retry safe)."
        )
        raise Problem(503, detail, headers={"Retry-After": "5"}, extensions={"id": str(document_id)}) from exc


async def _publish_and_wait(
    res: Resources, caller: Caller, event: Envelope, document_id: uuid.UUID, *, keyed: bool
) -> None:
    indexed: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

    async def on_indexed(msg: Any) -> None:
        if json.loads(msg.data).get("data", {}).get("documentId") == str(document_id) and not indexed.done():
            indexed.set_result(True)

    subscription = await res.nc.subscribe(subjects.cortex_document_indexed(caller.organization_id), cb=on_indexed)
    try:
        await _publish(res, caller, event, document_id, keyed=keyed)
        if not await _already_indexed(res, caller, document_id):  # a retried request may find it done
            await asyncio.wait_for(indexed, timeout=res.settings.wait_timeout_seconds)
    except TimeoutError as exc:
        detail = f"Note {document_id} was accepted but not indexed in time; it stays queued (should it keep failing, "
        raise Problem(
            504, detail + "the event goes to the dead letters: `cortex dlq list`).", extensions={"id": str(document_id)}
        ) from exc
    finally:
        await subscription.unsubscribe()


@router.post(
    "/documents",
    status_code=202,
    response_model=Created,
    summary="Add an org note (admin)",
    dependencies=[Depends(json_content)],
    responses={
        201: {"model": Created, "description": "Indexed and searchable (with ?wait=true)"},
        403: problem("Not an admin"),
        **UNSUPPORTED_MEDIA_TYPE,
        **ERRORS,
        504: problem("Not indexed within the wait timeout"),
        422: problem("Invalid note, or an Idempotency-Key first used with a different request"),
    },
)
async def create_note(
    note: NoteCreate,
    caller: AdminDep,
    res: ResourcesDep,
    wait: Annotated[bool, Query(description="Answer 201 only once the note is searchable.")] = False,
    idempotency_key: Annotated[
        str | None,
        Header(
            alias="Idempotency-Key",
            min_length=1,
            max_length=200,
            pattern=NO_NUL,
            description=(
                "A retry with the same key and request returns the first result and creates nothing new; "
                "the key with a different request is 422."
            ),
        ),
    ] = None,
) -> JSONResponse:
    document_id = (
        await document_for_key(
            res.sessions,
            caller.organization_id,
            caller.principal,
            idempotency_key,
            note.model_dump(mode="json", by_alias=True),
        )
        if idempotency_key
        else uuid.uuid4()
    )
    event = await _note_event(res, caller, note, document_id)
    if not wait:
        await _publish(res, caller, event, document_id, keyed=idempotency_key is not None)
        return JSONResponse({"id": str(document_id)}, status_code=202)
    await _publish_and_wait(res, caller, event, document_id, keyed=idempotency_key is not None)
    return JSONResponse({"id": str(document_id)}, status_code=201)
