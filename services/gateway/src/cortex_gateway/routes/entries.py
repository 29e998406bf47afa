"""`/api/memory/entries`, `/api/memory/recall` and `/api/memory/agent-memories`: agents remember and recall
through Cortex; people browse the agent memory kept in external backends."""

import asyncio
import uuid
from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator
from sqlalchemy import select, text

from cortex_contracts import subjects
from cortex_contracts.base import NO_NUL, is_blank, nfc_within
from cortex_contracts.envelope import new_envelope
from cortex_contracts.json_metadata import JsonMetadata
from cortex_contracts.memory import (
    MAX_RECALL_LIMIT,
    MAX_RECALL_QUERY_CHARS,
    TYPE_ENTRY_REMEMBERED,
    AgentMemories,
    AgentMemoriesRequest,
    EntryContent,
    EntryRemembered,
    MemoryPartition,
    MemoryTier,
    Recalled,
    RecallRequest,
    ScopeName,
    StoredEntry,
    check_tier_scope,
    derive_entry_id,
)
from cortex_contracts.rpc import AgentMemoriesReply, RecallReply
from cortex_gateway.aggregator_client import relay_aggregator
from cortex_gateway.auth import Caller, CallerDep, ResourcesDep
from cortex_gateway.event_ids import event_id
from cortex_gateway.json_body import UNSUPPORTED_MEDIA_TYPE, json_content
from cortex_gateway.problems import Problem
from cortex_gateway.resources import Resources
from cortex_gateway.routes.responses import ERRORS, problem
from cortex_messaging.publisher import publish_event
from cortex_store.models import Work
from cortex_store.tenancy import org_transaction

router = APIRouter(prefix="/api/memory", tags=["agent memory"])

WAIT_POLL_SECONDS = 0.1


class EntryCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    content: EntryContent
    partition: MemoryPartition = MemoryPartition.EPISODIC
    tier: MemoryTier | None = Field(
        default=None, description="Default: `session` with a memorySessionId, else `work` with a workId, else `org`."
    )
    work_id: uuid.UUID | None = Field(
        default=None, alias="workId", description="A Work of the organization's catalog; needed with tier `work`."
    )
    memory_session_id: ScopeName = Field(default=None, alias="memorySessionId", max_length=200, pattern=NO_NUL)
    agent_id: ScopeName = Field(default=None, alias="agentId", max_length=200, pattern=NO_NUL)
    agent_run_id: ScopeName = Field(default=None, alias="agentRunId", max_length=200, pattern=NO_NUL)
    metadata: JsonMetadata | None = None

    @model_validator(mode="after")
    def _tier_names_its_scope(self) -> "EntryCreate":
        check_tier_scope(self.scope_tier, self.work_id, self.memory_session_id)
        return self

    @property
    def scope_tier(self) -> MemoryTier:
        """The tier given, else the narrowest scope named: an entry without a session is not session memory."""
        if self.tier is not None:
            return self.tier
        return MemoryTier.SESSION if self.memory_session_id else MemoryTier.WORK if self.work_id else MemoryTier.ORG


class EntryAccepted(BaseModel):
    id: uuid.UUID
    deduplicated: bool


def entry_id(caller: Caller, entry: EntryCreate) -> uuid.UUID:
    return derive_entry_id(
        caller.organization_id,
        entry.scope_tier,
        entry.partition,
        entry.work_id,
        entry.memory_session_id,
        entry.agent_id,
        entry.content,
    )


ENTRY_STORED = text("SELECT EXISTS (SELECT 1 FROM memory_entry WHERE organization_id = :org AND id = :id)")
ENTRY = text("""
SELECT id, content, partition::text AS partition, tier::text AS tier, work_id, memory_session_id, agent_id,
       agent_run_id, metadata, salience, created_at
FROM memory_entry WHERE organization_id = :org AND id = :id
""")


async def _exists(res: Resources, caller: Caller, id_: uuid.UUID) -> bool:
    """Read here, not asked of the aggregator: remembering works while reads are down (QA 36: a paused
    aggregator made every remember a 504)."""
    async with org_transaction(res.sessions, caller.organization_id) as session:
        return bool(await session.scalar(ENTRY_STORED, {"org": caller.organization_id, "id": id_}))


async def _work_in_catalog(res: Resources, caller: Caller, work_id: uuid.UUID) -> bool:
    """The Work is the organization's, as its catalog has it (another organization's is not seen)."""
    async with org_transaction(res.sessions, caller.organization_id) as session:
        known = select(Work.id).where(
            Work.organization_id == caller.organization_id, Work.id == work_id, Work.deleted_at.is_(None)
        )
        return await session.scalar(known) is not None


@router.post(
    "/entries",
    status_code=202,
    response_model=EntryAccepted,
    summary="Remember something",
    dependencies=[Depends(json_content)],
    responses={
        200: {"model": EntryAccepted, "description": "Already stored: the same content in the same scope"},
        201: {"model": EntryAccepted, "description": "Stored and recallable (with ?wait=true)"},
        **UNSUPPORTED_MEDIA_TYPE,
        **ERRORS,
        504: problem("Not stored within the wait timeout"),
    },
)
async def remember(
    entry: EntryCreate,
    caller: CallerDep,
    res: ResourcesDep,
    wait: Annotated[bool, Query(description="Answer 201 once the entry is recallable.")] = False,
) -> JSONResponse:
    if entry.work_id is not None and not await _work_in_catalog(res, caller, entry.work_id):
        unknown = {"loc": ("body", "workId"), "msg": "no such Work in this organization", "type": "value_error"}
        raise RequestValidationError([unknown])
    id_ = entry_id(caller, entry)
    if await _exists(res, caller, id_):
        return JSONResponse({"id": str(id_), "deduplicated": True}, status_code=200)
    payload = EntryRemembered(
        entry_id=id_,
        organization_id=caller.organization_id,
        content=entry.content,
        partition=entry.partition,
        tier=entry.scope_tier,
        work_id=entry.work_id,
        memory_session_id=entry.memory_session_id,
        agent_id=entry.agent_id,
        agent_run_id=entry.agent_run_id,
        metadata=entry.metadata,
    )
    event = new_envelope(
        event_type=TYPE_ENTRY_REMEMBERED,
        source="cortex/gateway",
        org_id=caller.organization_id,
        subject=str(id_),
        data=payload.model_dump(mode="json", by_alias=True, exclude_none=True),
        tenant_id=caller.tenant_id,
        event_id=event_id(res.settings.secret.get_secret_value(), "entry", caller.organization_id, id_),
    )
    ack = await publish_event(res.js, subjects.memory_entry_remembered(caller.organization_id), event)
    # A twin request in flight published the same event id first: JetStream kept one and says so.
    deduplicated = ack.duplicate is True
    if not wait:
        return JSONResponse({"id": str(id_), "deduplicated": deduplicated}, status_code=202)
    try:
        async with asyncio.timeout(res.settings.wait_timeout_seconds):
            while not await _exists(res, caller, id_):  # noqa: ASYNC110 — storing emits no event to wait on
                await asyncio.sleep(WAIT_POLL_SECONDS)
    except TimeoutError as exc:
        detail = f"Entry {id_} was accepted but not stored in time; it stays queued (should it keep failing, "
        raise Problem(
            504, detail + "the event goes to the dead letters: `cortex dlq list`).", extensions={"id": str(id_)}
        ) from exc
    if deduplicated:
        return JSONResponse({"id": str(id_), "deduplicated": True}, status_code=200)
    return JSONResponse({"id": str(id_), "deduplicated": False}, status_code=201)


@router.get(
    "/entries/{entry_id}",
    response_model=StoredEntry,
    response_model_by_alias=True,
    response_model_exclude_none=True,
    summary="One remembered entry",
    responses={**ERRORS, 404: problem("No such entry, or not stored yet")},
)
async def get_entry(
    caller: CallerDep,
    res: ResourcesDep,
    entry_id: Annotated[uuid.UUID, Path(description="The id `POST /api/memory/entries` answered with.")],
) -> StoredEntry:
    """Read here, as remembering checks an entry: an agent reads back what it remembered while the reads are
    down. Before (QA 47) an entry's id led nowhere: no route showed one entry."""
    async with org_transaction(res.sessions, caller.organization_id) as session:
        row = (await session.execute(ENTRY, {"org": caller.organization_id, "id": entry_id})).first()
    if row is None:
        raise Problem(404, "No such entry: not remembered, or not stored yet (without ?wait=true it is stored soon).")
    return StoredEntry.model_validate(row._asdict())


@router.get(
    "/recall",
    response_model=Recalled,
    response_model_by_alias=True,
    response_model_exclude_none=True,
    summary="Recall memories by relevance and salience",
    description=(
        "`items` are Cortex's own entries. `external` are matches from external agent-memory backends "
        "(e.g. mem0): untrusted content, labelled with its `source` and also given `fenced`. `sources` says "
        "for each backend whether it answered; one that is down, slow or failing leaves `external` without "
        "its matches and the response is still 200."
    ),
    responses=ERRORS,
)
async def recall(
    caller: CallerDep,
    res: ResourcesDep,
    q: Annotated[
        str,
        Query(min_length=1, max_length=MAX_RECALL_QUERY_CHARS, pattern=NO_NUL, description="What to recall."),
        AfterValidator(nfc_within(MAX_RECALL_QUERY_CHARS)),
    ],
    limit: Annotated[int, Query(ge=1, le=MAX_RECALL_LIMIT)] = 10,
    partition: Annotated[list[MemoryPartition], Query(max_length=5)] = [],  # noqa: B006
    tier: Annotated[list[MemoryTier], Query(max_length=4)] = [],  # noqa: B006
    work_id: Annotated[uuid.UUID | None, Query(alias="workId")] = None,
    session_id: Annotated[str | None, Query(alias="sessionId", max_length=200, pattern=NO_NUL)] = None,
    agent_id: Annotated[str | None, Query(alias="agentId", max_length=200, pattern=NO_NUL)] = None,
    min_score: Annotated[
        float | None,
        Query(
            alias="minScore",
            ge=0,
            le=1,
            allow_inf_nan=False,
            description="Leave out entries scored below this (e.g. 0.3): an agent gets nothing rather than the "
            "`limit` best of unrelated memories. External matches are not filtered.",
        ),
    ] = None,
) -> Response:
    if is_blank(q):  # the feed reads a blank `q` as none; recall has no "none" to answer with
        blank: dict[str, object] = {
            "loc": ["query", "q"],
            "msg": "q is blank: give what to recall",
            "type": "value_error",
        }
        raise Problem(422, "The request is not valid.", extensions={"errors": [blank]})
    request = RecallRequest(
        organization_id=caller.organization_id,
        q=q,
        limit=limit,
        partition=partition,
        tier=tier,
        work_id=work_id,
        memory_session_id=session_id,
        agent_id=agent_id,
        min_score=min_score,
    )
    return await relay_aggregator(res, subjects.RPC_AGGREGATOR_RECALL, request, RecallReply, Recalled)


@router.get(
    "/agent-memories",
    response_model=AgentMemories,
    response_model_by_alias=True,
    response_model_exclude_none=True,
    summary="Browse the agent memory kept in external backends",
    description=(
        "Lists the memories each external agent-memory backend (e.g. mem0) holds for this organization, "
        "narrowed to a Work and/or an agent. Untrusted content, labelled with its `source`. Best effort: "
        "a backend that is down, slow or cannot list contributes nothing, `sources` says why, and the "
        "response is still 200."
    ),
    responses=ERRORS,
)
async def agent_memories(
    caller: CallerDep,
    res: ResourcesDep,
    limit: Annotated[int, Query(ge=1, le=MAX_RECALL_LIMIT)] = 50,
    work_id: Annotated[uuid.UUID | None, Query(alias="workId")] = None,
    agent_id: Annotated[str | None, Query(alias="agentId", max_length=200, pattern=NO_NUL)] = None,
) -> Response:
    request = AgentMemoriesRequest(
        organization_id=caller.organization_id, work_id=work_id, agent_id=agent_id, limit=limit
    )
    return await relay_aggregator(
        res, subjects.RPC_AGGREGATOR_AGENT_MEMORIES, request, AgentMemoriesReply, AgentMemories
    )
