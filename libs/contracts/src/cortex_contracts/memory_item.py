"""`MemoryItem`: one row of the org feed, whatever kind of knowledge it is."""

from datetime import datetime
from enum import StrEnum
from uuid import UUID

from pydantic import Field

from cortex_contracts.base import WireModel


class ItemKind(StrEnum):
    DOCUMENT = "document"
    NOTE = "note"
    UPLOAD = "upload"
    MEMORY = "memory"
    CONCEPT = "concept"


class ItemStatus(StrEnum):
    """A document's lifecycle status as stored: an upstream KB's three, and `failed` for a file that could not
    be read."""

    DRAFT = "draft"
    PUBLISHED = "published"
    ARCHIVED = "archived"
    FAILED = "failed"


class MemoryItem(WireModel):
    id: UUID = Field(description="The document's id (of a KB document, an org note or an upload).")
    kind: ItemKind = Field(
        description=(
            "What sort of knowledge the item is: `document`, `note` or `upload` today. `memory` and `concept` are "
            "reserved: agent memory entries are reached through recall, and concepts arrive with the synthesizer."
        )
    )
    title: str = Field(description="Display title.")
    snippet: str = Field(description="A short excerpt, the best-matching passage when searching.")
    doc_class: str | None = Field(default=None, description="Document class.")
    source: str | None = Field(default=None, description="Producing system.")
    work_id: UUID | None = Field(default=None, description="Work the item belongs to.")
    work_title: str | None = Field(default=None, description="Title of that Work.")
    mission_id: UUID | None = Field(default=None, description="Mission of that Work.")
    mission_title: str | None = Field(default=None, description="Title of that Mission.")
    team_id: UUID | None = Field(default=None, description="Team owning that Work.")
    team_name: str | None = Field(default=None, description="Name of that Team.")
    agent_id: str | None = Field(default=None, description="Agent that produced the item.")
    agent_run_id: str | None = Field(default=None, description="Agent run that produced the item.")
    memory_session_id: str | None = Field(default=None, description="Memory session of the item.")
    status: ItemStatus | None = Field(
        default=None,
        description="A document's lifecycle status: draft, published, archived, or failed (a file that could "
        "not be read; its detail gives the reason).",
    )
    score: float | None = Field(default=None, description="Relevance score when searching (higher is better).")
    updated_at: datetime = Field(description="When the item last changed.")
    last_indexed_at: datetime | None = Field(default=None, description="When Cortex last indexed it.")
