"""Agent memory: entries remembered by agents (or people), recalled by relevance and salience."""

from datetime import datetime
from enum import StrEnum
from typing import Any
from uuid import UUID

from pydantic import Field

from cortex_contracts.base import NO_NUL, WireModel

MAX_ENTRY_CHARS = 8192
TYPE_ENTRY_REMEMBERED = "memory.entry.remembered"
MAX_RECALL_LIMIT = 100


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


class EntryRemembered(WireModel):
    entry_id: UUID = Field(description="Derived from the scope and the content: the same memory, the same id.")
    organization_id: UUID
    content: str = Field(min_length=1, max_length=MAX_ENTRY_CHARS, pattern=NO_NUL)
    partition: MemoryPartition
    tier: MemoryTier
    work_id: UUID | None = None
    memory_session_id: str | None = Field(default=None, max_length=200, pattern=NO_NUL)
    agent_id: str | None = Field(default=None, max_length=200, pattern=NO_NUL)
    agent_run_id: str | None = Field(default=None, max_length=200, pattern=NO_NUL)
    metadata: dict[str, Any] | None = Field(default=None, description="Free-form JSON, at most 16 KiB.")
    remembered_at: datetime | None = None


class RecallRequest(WireModel):
    organization_id: UUID
    q: str = Field(min_length=1, max_length=4000, pattern=NO_NUL)
    limit: int = Field(default=10, ge=1, le=MAX_RECALL_LIMIT)
    partition: list[MemoryPartition] = Field(default_factory=list, max_length=5)
    tier: list[MemoryTier] = Field(default_factory=list, max_length=4)
    work_id: UUID | None = None
    memory_session_id: str | None = Field(default=None, max_length=200, pattern=NO_NUL)
    agent_id: str | None = Field(default=None, max_length=200, pattern=NO_NUL)


class RecalledEntry(WireModel):
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
    score: float
    created_at: datetime


class Recalled(WireModel):
    items: list[RecalledEntry]


class EntryLookup(WireModel):
    organization_id: UUID
    entry_id: UUID


class EntryFound(WireModel):
    found: bool
