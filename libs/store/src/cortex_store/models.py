"""SQLAlchemy models. The schema itself changes only through the Alembic migrations beside this."""

import enum
import uuid
from datetime import datetime

from pgvector.sqlalchemy import Vector
from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Computed,
    DateTime,
    Enum,
    ForeignKey,
    Index,
    Integer,
    Text,
    false,
    func,
)
from sqlalchemy import text as sql_text
from sqlalchemy.dialects.postgresql import ARRAY, TSVECTOR, UUID
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

EMBEDDING_DIM = 384  # the dimension migrations create; the recorded `EmbeddingSpace` is what holds now
TEXT_SEARCH_CONFIG = "english"


class Base(DeclarativeBase):
    pass


class MemberRole(enum.StrEnum):
    MEMBER = "member"
    ADMIN = "admin"


class Organization(Base):
    __tablename__ = "organizations"

    id: Mapped[uuid.UUID] = mapped_column(UUID, primary_key=True, default=uuid.uuid4)
    slug: Mapped[str] = mapped_column(Text, unique=True)
    name: Mapped[str] = mapped_column(Text)
    tenant_id: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    # Big enough to walk the HNSW graph: its passages are in it (migration 0014).
    ann_indexed: Mapped[bool] = mapped_column(Boolean, server_default=false())


class Work(Base):
    __tablename__ = "works"

    id: Mapped[uuid.UUID] = mapped_column(UUID, primary_key=True)
    organization_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("organizations.id"), index=True)
    title: Mapped[str] = mapped_column(Text)
    mission_id: Mapped[uuid.UUID | None] = mapped_column(UUID)
    version: Mapped[int] = mapped_column(BigInteger, default=0)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    deleted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class Mission(Base):
    __tablename__ = "missions"

    id: Mapped[uuid.UUID] = mapped_column(UUID, primary_key=True)
    organization_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("organizations.id"))
    title: Mapped[str] = mapped_column(Text)
    version: Mapped[int] = mapped_column(BigInteger, default=0)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    deleted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class Team(Base):
    __tablename__ = "teams"

    id: Mapped[uuid.UUID] = mapped_column(UUID, primary_key=True)
    organization_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("organizations.id"))
    name: Mapped[str] = mapped_column(Text)
    version: Mapped[int] = mapped_column(BigInteger, default=0)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    deleted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class TeamResource(Base):
    __tablename__ = "team_resources"

    team_id: Mapped[uuid.UUID] = mapped_column(UUID, primary_key=True)
    resource_type: Mapped[str] = mapped_column(Text, primary_key=True)
    resource_id: Mapped[uuid.UUID] = mapped_column(UUID, primary_key=True)
    organization_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("organizations.id"))
    version: Mapped[int] = mapped_column(BigInteger, default=0)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    deleted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class OrgMember(Base):
    __tablename__ = "org_members"

    organization_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("organizations.id"), primary_key=True)
    user_id: Mapped[str] = mapped_column(Text, primary_key=True)
    role: Mapped[MemberRole] = mapped_column(
        Enum(MemberRole, name="member_role", values_callable=lambda e: [m.value for m in e]),
    )
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    version: Mapped[int] = mapped_column(BigInteger, default=0)
    deleted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class ApiKey(Base):
    """A service account's or agent's key: scoped to one organization with a role; stored hashed."""

    __tablename__ = "api_keys"

    id: Mapped[uuid.UUID] = mapped_column(UUID, primary_key=True, default=uuid.uuid4)
    organization_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("organizations.id"))
    name: Mapped[str] = mapped_column(Text)
    key_hash: Mapped[str] = mapped_column(Text, unique=True)
    role: Mapped[MemberRole] = mapped_column(
        Enum(MemberRole, name="member_role", values_callable=lambda e: [m.value for m in e], create_type=False),
    )
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class KbDocument(Base):
    """A knowledge-base document, scoped to one Work or to the whole organization (never both)."""

    __tablename__ = "kb_documents"
    __table_args__ = (
        CheckConstraint("(scope = 'work') = (work_id IS NOT NULL)", name="kb_documents_scope_matches_work"),
        Index(
            "kb_documents_feed",
            "organization_id",
            "updated_at",
            "id",
            postgresql_where="deleted_at IS NULL",
        ),
        Index("kb_documents_mirror_pending", "organization_id", "id", postgresql_where="mirror_pending"),
    )

    id: Mapped[uuid.UUID] = mapped_column(UUID, primary_key=True)
    organization_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("organizations.id"))
    tenant_id: Mapped[str | None] = mapped_column(Text)
    scope: Mapped[str] = mapped_column(Text)
    work_id: Mapped[uuid.UUID | None] = mapped_column(UUID)
    title: Mapped[str] = mapped_column(Text)
    doc_class: Mapped[str | None] = mapped_column(Text)
    status: Mapped[str] = mapped_column(Text)
    source: Mapped[str] = mapped_column(Text)
    tags: Mapped[list[str]] = mapped_column(ARRAY(Text), default=list)
    body: Mapped[str] = mapped_column(Text)
    content_hash: Mapped[str] = mapped_column(Text)
    version: Mapped[int] = mapped_column(BigInteger)
    embedded: Mapped[bool] = mapped_column(default=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    last_indexed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    deleted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    upload_id: Mapped[uuid.UUID | None] = mapped_column(UUID)
    token_count: Mapped[int] = mapped_column(Integer, default=0)
    agent_id: Mapped[str | None] = mapped_column(Text)
    agent_run_id: Mapped[str | None] = mapped_column(Text)
    failure_reason: Mapped[str | None] = mapped_column(Text)  # why its file could not be read (status failed)
    # The vector store of its own (Qdrant) has not taken its latest change yet: the backfill mirrors it.
    mirror_pending: Mapped[bool] = mapped_column(Boolean, server_default=false())


class KbUpload(Base):
    __tablename__ = "kb_uploads"

    id: Mapped[uuid.UUID] = mapped_column(UUID, primary_key=True)
    organization_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("organizations.id"))
    work_id: Mapped[uuid.UUID | None] = mapped_column(UUID)
    filename: Mapped[str] = mapped_column(Text)
    media_type: Mapped[str] = mapped_column(Text)
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    object_bucket: Mapped[str | None] = mapped_column(Text)
    object_name: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class KbCitation(Base):
    __tablename__ = "kb_citations"

    organization_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("organizations.id"))
    citing_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("kb_documents.id", ondelete="CASCADE"), primary_key=True)
    cited_id: Mapped[uuid.UUID] = mapped_column(UUID, primary_key=True)


class KbChunk(Base):
    """A passage of a document: its text, lexical vector and (when an embedder runs) its embedding."""

    __tablename__ = "kb_chunks"
    __table_args__ = (
        Index(
            "kb_chunks_embedding_hnsw",
            "embedding",
            postgresql_using="hnsw",
            postgresql_ops={"embedding": "vector_cosine_ops"},
            postgresql_where=sql_text("in_ann"),
        ),
        Index("kb_chunks_org", "organization_id"),
        Index("kb_chunks_document", "document_id", "ordinal"),
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    document_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("kb_documents.id", ondelete="CASCADE"))
    organization_id: Mapped[uuid.UUID] = mapped_column(UUID)
    ordinal: Mapped[int] = mapped_column(Integer)
    heading: Mapped[str] = mapped_column(Text)
    text: Mapped[str] = mapped_column(Text)
    content_hash: Mapped[str] = mapped_column(Text)
    tsv: Mapped[str] = mapped_column(
        TSVECTOR,
        Computed(
            f"setweight(to_tsvector('{TEXT_SEARCH_CONFIG}', heading), 'A') || "
            f"to_tsvector('{TEXT_SEARCH_CONFIG}', text)",
            persisted=True,
        ),
    )
    # No fixed dimension here: the column is altered when the embedding space changes (migration 0010).
    embedding: Mapped[list[float] | None] = mapped_column(Vector())
    token_count: Mapped[int] = mapped_column(Integer, default=0)
    # In the HNSW graph: its organization is admitted (migration 0014), as its every passage then is.
    in_ann: Mapped[bool] = mapped_column(Boolean, server_default=false())


class KbPosting(Base):
    """One lexeme of one chunk, with its term frequency: the lexical leg scores BM25 from these."""

    __tablename__ = "kb_postings"

    organization_id: Mapped[uuid.UUID] = mapped_column(UUID, primary_key=True)
    lexeme: Mapped[str] = mapped_column(Text, primary_key=True)
    chunk_id: Mapped[int] = mapped_column(ForeignKey("kb_chunks.id", ondelete="CASCADE"), primary_key=True)
    document_id: Mapped[uuid.UUID] = mapped_column(UUID)
    tf: Mapped[int] = mapped_column(Integer)
    document_tokens: Mapped[int] = mapped_column(Integer)


class EmbeddingSpace(Base):
    """The model and dimension stored embeddings were made with; one row is active. Changed only by
    the `cortex_switch_embedding_space` function (migration 0010), which clears what must be re-embedded."""

    __tablename__ = "embedding_space"
    __table_args__ = (Index("embedding_space_one_active", "active", unique=True, postgresql_where="active"),)

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    model: Mapped[str] = mapped_column(Text)
    dimension: Mapped[int] = mapped_column(Integer)
    active: Mapped[bool] = mapped_column(default=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class ProcessedEvent(Base):
    """Inbox of handled event ids per consumer: a redelivered or duplicated event changes nothing."""

    __tablename__ = "processed_events"

    consumer: Mapped[str] = mapped_column(Text, primary_key=True)
    event_id: Mapped[str] = mapped_column(Text, primary_key=True)
    processed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class PluginChoice(Base):
    """An organization's active plugin for one category (`cortex plugins use`); an environment pin still wins."""

    __tablename__ = "plugin_choices"

    organization_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("organizations.id"), primary_key=True)
    category: Mapped[str] = mapped_column(Text, primary_key=True)
    plugin: Mapped[str] = mapped_column(Text)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class IdempotencyKey(Base):
    """The note a caller's `Idempotency-Key` made, and a hash of the request that made it (migration 0016)."""

    __tablename__ = "idempotency_keys"

    organization_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("organizations.id"), primary_key=True)
    principal: Mapped[str] = mapped_column(Text, primary_key=True)
    key: Mapped[str] = mapped_column(Text, primary_key=True)
    request_sha256: Mapped[str] = mapped_column(Text)
    document_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
