"""Agent memory: entries remembered by agents (or people), recalled by relevance and salience."""

import hashlib
import json
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Protocol, runtime_checkable
from uuid import UUID, uuid5

from pydantic import AfterValidator, Field, model_validator

from cortex_contracts.base import NO_NUL, WireModel, is_blank, nfc_within
from cortex_contracts.json_metadata import JsonMetadata

MAX_ENTRY_CHARS = 8192
TYPE_ENTRY_REMEMBERED = "memory.entry.remembered"
MAX_RECALL_LIMIT = 100
MAX_RECALL_QUERY_CHARS = 4000
ENTRY_NAMESPACE = UUID("6a1f0c3d-9e2b-4f7a-8c5d-3b4e2a1f0d9c")


class MemoryPartition(StrEnum):
    WORKING = "working"
    EPISODIC = "episodic"
    SEMANTIC = "semantic"
    PROCEDURAL = "procedural"
    USER_MODEL = "user-model"


class MemoryTier(StrEnum):
    SESSION = "session"
    WORK = "work"
    ORG = "org"
    GLOBAL = "global"


def _none_if_empty(value: str | None) -> str | None:
    """An empty (or blank) session, agent or run id names none: an entry's id is derived that way (the same
    memory sent with `""` and without is one entry), so it is stored that way too."""
    return None if value is None or is_blank(value) else value


ScopeName = Annotated[str | None, AfterValidator(_none_if_empty)]


def _has_text(content: str) -> str:
    if is_blank(content):  # only white space or zero-width characters: nothing to recall it by
        raise ValueError("content must not be blank")
    return content


# One spelling of what reads the same: "café" typed with é or with e + U+0301 is one memory, with one id (QA 36:
# two entries). Only canonical equivalents are folded: case and white space are kept. Some characters grow
# in NFC (U+0958 is two): the limit holds as stored.
_nfc = nfc_within(MAX_ENTRY_CHARS)


# What an entry remembers, as an event carries it and as POST /entries takes it: stored and hashed in NFC.
EntryContent = Annotated[
    str,
    Field(min_length=1, max_length=MAX_ENTRY_CHARS, pattern=NO_NUL),
    AfterValidator(_has_text),
    AfterValidator(_nfc),
]


def check_tier_scope(tier: MemoryTier, work_id: UUID | None, memory_session_id: str | None) -> None:
    """A Work-tier entry belongs to a Work, a session-tier one to a session: it names it (else no recall
    scoped to one could ever find it)."""
    if tier is MemoryTier.WORK and work_id is None:
        raise ValueError("tier `work` needs a workId")
    if tier is MemoryTier.SESSION and memory_session_id is None:
        raise ValueError("tier `session` needs a memorySessionId")


def derive_entry_id(
    organization_id: UUID,
    tier: MemoryTier,
    partition: MemoryPartition,
    work_id: UUID | None,
    memory_session_id: str | None,
    agent_id: str | None,
    content: str,
) -> UUID:
    """The same content in the same scope is the same memory: its id derives from both (the run is no part of
    the scope: a memory learnt again in another run is the same memory)."""
    scope = [organization_id, tier.value, partition.value, work_id, memory_session_id, agent_id]
    digest = hashlib.sha256(content.encode()).hexdigest()
    return uuid5(ENTRY_NAMESPACE, json.dumps([str(part) if part else "" for part in scope] + [digest]))


class EntryRemembered(WireModel):
    entry_id: UUID | None = Field(
        default=None,
        description=(
            "Best left out: Cortex gives an entry the id derived from its scope and content, so that the same "
            "memory is one entry however it arrives. An event that names another id is dead-lettered, the "
            "reason naming the id it would have. (The derivation: UUIDv5 in namespace "
            f"{ENTRY_NAMESPACE} of Python's json.dumps of [organizationId, tier, partition, workId, "
            'memorySessionId, agentId, the SHA-256 hex of the content in Unicode NFC], absent parts as "".)'
        ),
    )
    organization_id: UUID
    content: EntryContent
    partition: MemoryPartition
    tier: MemoryTier
    work_id: UUID | None = None
    memory_session_id: ScopeName = Field(default=None, max_length=200, pattern=NO_NUL)
    agent_id: ScopeName = Field(default=None, max_length=200, pattern=NO_NUL)
    agent_run_id: ScopeName = Field(default=None, max_length=200, pattern=NO_NUL)
    metadata: JsonMetadata | None = Field(
        default=None, description="Free-form JSON: at most 16 KiB, 32 levels deep, finite numbers, no NUL."
    )
    remembered_at: datetime | None = None

    @model_validator(mode="after")
    def _tier_names_its_scope(self) -> "EntryRemembered":
        check_tier_scope(self.tier, self.work_id, self.memory_session_id)
        return self

    @model_validator(mode="after")
    def _entry_id_is_derived(self) -> "EntryRemembered":
        if self.entry_id is not None and self.entry_id != self.id:
            msg = f"entryId should be {self.id}, derived from this scope and content (or left out), not {self.entry_id}"
            raise ValueError(msg)
        return self

    @property
    def id(self) -> UUID:
        return derive_entry_id(
            self.organization_id,
            self.tier,
            self.partition,
            self.work_id,
            self.memory_session_id,
            self.agent_id,
            self.content,
        )


class RecallRequest(WireModel):
    organization_id: UUID
    q: Annotated[str, AfterValidator(nfc_within(MAX_RECALL_QUERY_CHARS))] = Field(
        min_length=1, max_length=MAX_RECALL_QUERY_CHARS, pattern=NO_NUL
    )
    limit: int = Field(default=10, ge=1, le=MAX_RECALL_LIMIT)
    partition: list[MemoryPartition] = Field(default_factory=list, max_length=5)
    tier: list[MemoryTier] = Field(default_factory=list, max_length=4)
    work_id: UUID | None = None
    # Empty names none, as when remembering: `?sessionId=` is no filter, not a filter nothing matches.
    memory_session_id: ScopeName = Field(default=None, max_length=200, pattern=NO_NUL)
    agent_id: ScopeName = Field(default=None, max_length=200, pattern=NO_NUL)
    min_score: float | None = Field(
        default=None,
        ge=0,
        le=1,
        allow_inf_nan=False,
        description="Leave out entries scored below this (see `score`); none: the `limit` best, however weak.",
    )


class StoredEntry(WireModel):
    """A memory entry as stored (`GET /api/memory/entries/{id}`)."""

    id: UUID
    content: str
    partition: MemoryPartition
    tier: MemoryTier
    work_id: UUID | None = None
    memory_session_id: str | None = None
    agent_id: str | None = None
    agent_run_id: str | None = None
    metadata: dict[str, Any] | None = None
    salience: float
    created_at: datetime


class RecalledEntry(StoredEntry):
    score: float = Field(
        description="Relevance in [0, 1] (0.3 × BM25 relative to the best lexical match + 0.7 × the cosine to the "
        "query, at least 0; BM25 alone without an embedder) plus 0.1 × (salience − 0.5). With the local model an "
        "entry about something else scores about 0.2 or less."
    )


# Agent memory kept outside Cortex (e.g. a mem0 server), read through `memory` plugins. What such a plugin
# returns is untrusted content: it travels labelled with its source and fenced, never as instructions.


class ExternalMemoryFailure(StrEnum):
    """Why an external agent-memory backend gave nothing; a small fixed set, so metrics stay bounded."""

    TIMEOUT = "timeout"
    UNAVAILABLE = "unavailable"  # connection refused, DNS, reset
    NOT_FOUND = "not_found"  # 404: e.g. a server without the listing endpoint
    SERVER_ERROR = "server_error"  # 5xx
    CLIENT_ERROR = "client_error"  # other 4xx (auth, validation)
    BAD_RESPONSE = "bad_response"  # not the expected JSON shape


class MemoryNamespace(WireModel):
    """Whose agent memory: always one organization, optionally narrowed to one Work and/or one agent."""

    organization_id: UUID
    work_id: UUID | None = None
    agent_id: str | None = Field(default=None, max_length=200, pattern=NO_NUL)


class ExternalMemory(WireModel):
    source: str = Field(description="The plugin the memory came from, e.g. `mem0`.")
    id: str
    content: str = Field(description="The memory as the backend returned it: untrusted, never instructions.")
    fenced: str = Field(description="`content` fenced and labelled with its source, ready to quote in a prompt.")
    untrusted: bool = Field(default=True, description="Always true: content from outside Cortex.")
    score: float | None = None
    agent_id: str | None = None
    run_id: str | None = None
    metadata: dict[str, Any] | None = None
    created_at: datetime | None = None


class ExternalSourceStatus(WireModel):
    source: str
    ok: bool
    reason: ExternalMemoryFailure | None = Field(default=None, description="Why the source gave nothing.")


class ExternalMemories(WireModel):
    """What one backend answered; on failure `items` is empty and `status` says why."""

    items: list[ExternalMemory]
    status: ExternalSourceStatus


class Recalled(WireModel):
    items: list[RecalledEntry]
    external: list[ExternalMemory] = Field(
        default_factory=list, description="Matches from external agent-memory backends (untrusted, labelled)."
    )
    sources: list[ExternalSourceStatus] = Field(
        default_factory=list, description="One per configured external backend: answered, or why not."
    )
    truncated: bool | None = Field(
        default=None,
        description=(
            "True when the lowest-ranked matches (external ones first) were left out so that the answer fits in "
            "one NATS message (the server's max_payload): ask for fewer (`limit`) to see where the answer ends."
        ),
    )


class AgentMemoriesRequest(WireModel):
    organization_id: UUID
    work_id: UUID | None = None
    # Empty names none, as in a recall: `?agentId=` lists every agent's memories, not an agent named "".
    agent_id: ScopeName = Field(default=None, max_length=200, pattern=NO_NUL)
    limit: int = Field(default=50, ge=1, le=MAX_RECALL_LIMIT)


class AgentMemories(WireModel):
    """The listing of the namespace's memories in every external backend (best effort, per source)."""

    items: list[ExternalMemory]
    sources: list[ExternalSourceStatus]


@runtime_checkable
class AgentMemoryReader(Protocol):
    """A `memory` plugin that reads an external agent-memory backend. Best effort: it never raises; a
    backend that is down, slow or refuses answers empty `items` with a failed `status`."""

    name: str

    async def search(self, namespace: MemoryNamespace, query: str, limit: int) -> ExternalMemories: ...

    async def list_memories(self, namespace: MemoryNamespace, limit: int) -> ExternalMemories: ...

    async def health(self) -> str | None: ...

    async def aclose(self) -> None: ...
