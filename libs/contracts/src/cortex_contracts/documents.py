"""Knowledge-base document events: upserted, deleted, and the indexer's `indexed`."""

from datetime import datetime
from enum import StrEnum
from typing import Annotated
from uuid import UUID

from pydantic import AfterValidator, Field, StrictInt, StringConstraints, model_validator

from cortex_contracts.base import BIGINT_MAX, NO_NUL, WireModel, is_blank, nfc


def tag_key(text: str) -> str:
    """One tag for one word, however it is typed: "café" with é or with e + U+0301 (QA 30: two tags), and
    "Billing" from one Work's KB and "billing" from another's. Tags are kept lower-cased, in NFC, without
    surrounding white space (a filter's too: `tag=%20spaced%20` found nothing, QA 37)."""
    return nfc(text.strip().lower())


Tag = Annotated[
    str, StringConstraints(min_length=1, max_length=64, strip_whitespace=True, pattern=NO_NUL), AfterValidator(tag_key)
]


def class_key(doc_class: str) -> str:
    """One class however it is typed, as a tag is (`tag_key`): "Runbook" from one KB and "runbook" from another
    were two Type values both labelled Runbook, and `type=RUNBOOK` found neither (QA 47)."""
    return tag_key(doc_class)


def _class_or_none(doc_class: str | None) -> str | None:
    """A class is kept lower-cased, in NFC, without surrounding white space, and a blank one names none, as an
    absent one does: before (QA 42), `""` and `"  "` became Type facet values that no filter could select, and
    `" spec"` one beside `spec`."""
    return None if doc_class is None or is_blank(doc_class) else class_key(doc_class)


def _named_source(source: str) -> str:
    """A source is kept without surrounding white space; a blank one is refused (a document comes from
    somewhere, and the Source facet has no value for nowhere)."""
    if is_blank(source):
        raise ValueError("source must not be blank")
    return source.strip()


def _titled(title: str) -> str:
    """A title is kept without surrounding white space; a blank one is refused, as a note's is (a list of
    untitled items says nothing)."""
    if is_blank(title):
        raise ValueError("title must not be blank")
    return title.strip()


# Length and NUL are checked as sent, the white space then dropped.
DocClass = Annotated[str | None, Field(max_length=64, pattern=NO_NUL), AfterValidator(_class_or_none)]
Source = Annotated[str, Field(min_length=1, max_length=64, pattern=NO_NUL), AfterValidator(_named_source)]
Title = Annotated[str, Field(min_length=1, max_length=300, pattern=NO_NUL), AfterValidator(_titled)]
UNTITLED = "untitled"  # the title of a document that gives none of its own and has no name to show
MAX_BODY_CHARS = 1024 * 1024

TYPE_DOCUMENT_UPSERTED = "kb.document.upserted"
TYPE_DOCUMENT_DELETED = "kb.document.deleted"
TYPE_DOCUMENT_INDEXED = "cortex.document.indexed"


class DocumentStatus(StrEnum):
    DRAFT = "draft"
    PUBLISHED = "published"
    ARCHIVED = "archived"


class ObjectRef(WireModel):
    """A body or a file stored in the NATS Object Store instead of inline. Its name starts with its
    organization's id (`<organizationId>/…`): an event may name only its own organization's objects, however
    guessable another's names are."""

    bucket: str = Field(min_length=1, max_length=100, description="Object Store bucket name.")
    name: str = Field(
        min_length=1,
        max_length=500,
        description="Object name within the bucket: `<organizationId>/…`, the id of the event's organization.",
    )

    @classmethod
    def owned(cls, bucket: str, organization_id: UUID, name: str) -> "ObjectRef":
        return cls(bucket=bucket, name=f"{organization_id}/{name}")

    def owned_by(self, organization_id: UUID) -> bool:
        prefix = f"{organization_id}/"
        return self.name[: len(prefix)].lower() == prefix


class DocumentUpserted(WireModel):
    document_id: UUID = Field(description="Stable id of the document, chosen by the producer.")
    organization_id: UUID = Field(description="Owning organization; must match the envelope's orgid.")
    work_id: UUID | None = Field(default=None, description="Work the document belongs to; absent = org-scoped.")
    title: Title = Field(description="Document title; surrounding white space is dropped, and a blank one is refused.")
    doc_class: DocClass = Field(
        default=None,
        description="Document class, e.g. `spec`; surrounding white space is dropped, and a blank class is none.",
    )
    status: DocumentStatus = Field(default=DocumentStatus.PUBLISHED, description="Lifecycle status.")
    tags: list[Tag] = Field(default_factory=list, max_length=32, description="Free-form tags.")
    body: str | None = Field(
        default=None, max_length=MAX_BODY_CHARS, pattern=NO_NUL, description="Markdown or plain text."
    )
    body_ref: ObjectRef | None = Field(default=None, description="Body in the Object Store instead of inline.")
    source: Source = Field(
        default="kb",
        description="Producing system, e.g. `kb`; surrounding white space is dropped, and a blank one is refused.",
    )
    version: StrictInt = Field(
        ge=0,
        le=BIGINT_MAX,
        description="Monotonic per document; the highest version wins (a deletion of the same version wins over it).",
    )
    updated_at: datetime | None = Field(default=None, description="When the document last changed upstream.")
    upload_id: UUID | None = Field(default=None, description="Upload the document was extracted from.")
    agent_id: str | None = Field(
        default=None, max_length=200, pattern=NO_NUL, description="Agent that wrote the document."
    )
    agent_run_id: str | None = Field(
        default=None, max_length=200, pattern=NO_NUL, description="Agent run that wrote it."
    )
    cites: list[UUID] = Field(default_factory=list, max_length=200, description="Documents this one cites.")

    @model_validator(mode="after")
    def _one_body(self) -> "DocumentUpserted":
        if self.body is not None and self.body_ref is not None:
            raise ValueError("give either body or bodyRef, not both")
        return self


class DocumentDeleted(WireModel):
    document_id: UUID = Field(description="The document to delete.")
    organization_id: UUID = Field(description="Owning organization; must match the envelope's orgid.")
    version: StrictInt = Field(
        ge=0,
        le=BIGINT_MAX,
        description="The version deleted (the document's own, or higher); upserts of it or older, arriving later, "
        "change nothing.",
    )


class DocumentIndexed(WireModel):
    document_id: UUID = Field(description="The document that is now searchable (or removed).")
    organization_id: UUID = Field(description="Owning organization.")
    version: StrictInt = Field(ge=0, le=BIGINT_MAX, description="The version now in the index.")
    chunks: int = Field(ge=0, description="How many chunks the document has in the index.")
    embedded: bool = Field(description="Whether its chunks carry embeddings (false = lexical only).")
    deleted: bool = Field(default=False, description="True when this reports a deletion.")
    failure_reason: str | None = Field(
        default=None, description="Set when its file could not be read: the document is stored as failed, unsearchable."
    )
