"""`/api/memory`: the org feed and search, and org notes."""

import asyncio
import json
import uuid
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from cortex_contracts import subjects
from cortex_contracts.documents import MAX_BODY_CHARS, TYPE_DOCUMENT_UPSERTED, DocumentUpserted, Tag
from cortex_contracts.envelope import new_envelope
from cortex_contracts.rpc import MAX_FEED_LIMIT, FeedPage, FeedRequest
from cortex_gateway.aggregator_client import request_feed
from cortex_gateway.auth import AdminDep, CallerDep, ResourcesDep
from cortex_gateway.problems import Problem
from cortex_messaging.publisher import publish_event

router = APIRouter(prefix="/api/memory", tags=["memory"])

PROBLEM: dict[str, object] = {"content": {"application/problem+json": {}}}
ERRORS: dict[int | str, dict[str, object]] = {
    status: {"description": text, **PROBLEM}
    for status, text in {
        400: "Bad request (e.g. missing X-Scope-Slug, invalid cursor)",
        401: "Missing or invalid bearer token",
        404: "No such organization (or not a member)",
        422: "Invalid parameters",
    }.items()
}
NOTE_SOURCE = "note"


@router.get(
    "",
    response_model=FeedPage,
    response_model_by_alias=True,
    response_model_exclude_none=True,
    summary="Search or browse everything the organization knows",
    responses=ERRORS,
)
async def get_memory(
    caller: CallerDep,
    res: ResourcesDep,
    q: Annotated[str | None, Query(max_length=1000, description="Search text; absent = newest first.")] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_FEED_LIMIT, description="Page size.")] = 20,
    cursor: Annotated[str | None, Query(max_length=2000, description="`nextCursor` of the previous page.")] = None,
) -> FeedPage:
    request = FeedRequest(
        organization_id=caller.organization_id, q=(q or "").strip() or None, limit=limit, cursor=cursor
    )
    return await request_feed(res, request)


class NoteCreate(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    title: str = Field(min_length=1, max_length=300)
    body: str | None = Field(default=None, max_length=MAX_BODY_CHARS)
    doc_class: str | None = Field(default=None, alias="docClass", max_length=64)
    tags: list[Tag] = Field(default_factory=list, max_length=32)


class Created(BaseModel):
    id: uuid.UUID


@router.post(
    "/documents",
    status_code=202,
    response_model=Created,
    summary="Add an org note (admin)",
    responses={
        201: {"model": Created, "description": "Indexed and searchable (with ?wait=true)"},
        403: {"description": "Not an admin", **PROBLEM},
        504: {"description": "Not indexed within the wait timeout", **PROBLEM},
        **ERRORS,
    },
)
async def create_note(
    note: NoteCreate,
    caller: AdminDep,
    res: ResourcesDep,
    wait: Annotated[bool, Query(description="Answer 201 only once the note is searchable.")] = False,
) -> JSONResponse:
    document_id = uuid.uuid4()
    payload = DocumentUpserted(
        document_id=document_id,
        organization_id=caller.organization_id,
        title=note.title,
        body=note.body or "",
        doc_class=note.doc_class,
        tags=note.tags,
        source=NOTE_SOURCE,
        version=1,
    )
    event = new_envelope(
        event_type=TYPE_DOCUMENT_UPSERTED,
        source="cortex/gateway",
        org_id=caller.organization_id,
        subject=str(document_id),
        data=payload.model_dump(mode="json", by_alias=True, exclude_none=True),
        tenant_id=caller.tenant_id,
    )
    if not wait:
        await publish_event(res.js, subjects.kb_document_upserted(caller.organization_id), event)
        return JSONResponse({"id": str(document_id)}, status_code=202)
    indexed = asyncio.get_running_loop().create_future()

    async def on_indexed(msg: object) -> None:
        data = json.loads(msg.data).get("data", {})  # type: ignore[attr-defined]
        if data.get("documentId") == str(document_id) and not indexed.done():
            indexed.set_result(True)

    subscription = await res.nc.subscribe(subjects.cortex_document_indexed(caller.organization_id), cb=on_indexed)
    try:
        await publish_event(res.js, subjects.kb_document_upserted(caller.organization_id), event)
        await asyncio.wait_for(indexed, timeout=res.settings.wait_timeout_seconds)
    except TimeoutError as exc:
        raise Problem(504, f"Note {document_id} was accepted but not indexed in time; it will still appear.") from exc
    finally:
        await subscription.unsubscribe()
    return JSONResponse({"id": str(document_id)}, status_code=201)
