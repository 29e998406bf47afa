"""The spine: organizations, works, members, KB documents and chunks, processed-event inbox.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op
from pgvector.sqlalchemy import Vector
from sqlalchemy.dialects import postgresql as pg

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

NOW = sa.text("now()")


def upgrade() -> None:
    op.execute("CREATE EXTENSION IF NOT EXISTS vector")
    op.create_table(
        "organizations",
        sa.Column("id", pg.UUID, primary_key=True),
        sa.Column("slug", sa.Text, nullable=False, unique=True),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("tenant_id", sa.Text),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=NOW),
    )
    op.create_table(
        "works",
        sa.Column("id", pg.UUID, primary_key=True),
        sa.Column("organization_id", pg.UUID, sa.ForeignKey("organizations.id"), nullable=False),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("mission_id", pg.UUID),
        sa.Column("version", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False, server_default=NOW),
    )
    op.create_index("ix_works_organization_id", "works", ["organization_id"])
    member_role = pg.ENUM("member", "admin", name="member_role")
    op.create_table(
        "org_members",
        sa.Column("organization_id", pg.UUID, sa.ForeignKey("organizations.id"), primary_key=True),
        sa.Column("user_id", sa.Text, primary_key=True),
        sa.Column("role", member_role, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=NOW),
    )
    op.create_table(
        "kb_documents",
        sa.Column("id", pg.UUID, primary_key=True),
        sa.Column("organization_id", pg.UUID, sa.ForeignKey("organizations.id"), nullable=False),
        sa.Column("tenant_id", sa.Text),
        sa.Column("scope", sa.Text, nullable=False),
        sa.Column("work_id", pg.UUID),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("doc_class", sa.Text),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("source", sa.Text, nullable=False),
        sa.Column("tags", pg.ARRAY(sa.Text), nullable=False, server_default="{}"),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("content_hash", sa.Text, nullable=False),
        sa.Column("version", sa.BigInteger, nullable=False),
        sa.Column("embedded", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=NOW),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_indexed_at", sa.DateTime(timezone=True)),
        sa.Column("deleted_at", sa.DateTime(timezone=True)),
        sa.CheckConstraint("scope IN ('work', 'org')", name="kb_documents_scope_known"),
        sa.CheckConstraint("(scope = 'work') = (work_id IS NOT NULL)", name="kb_documents_scope_matches_work"),
    )
    op.create_index(
        "kb_documents_feed",
        "kb_documents",
        ["organization_id", sa.text("updated_at DESC"), sa.text("id DESC")],
        postgresql_where=sa.text("deleted_at IS NULL"),
    )
    op.create_table(
        "kb_chunks",
        sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
        sa.Column(
            "document_id",
            pg.UUID,
            sa.ForeignKey("kb_documents.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("organization_id", pg.UUID, nullable=False),
        sa.Column("ordinal", sa.Integer, nullable=False),
        sa.Column("heading", sa.Text, nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("content_hash", sa.Text, nullable=False),
        sa.Column(
            "tsv",
            pg.TSVECTOR,
            sa.Computed(
                "setweight(to_tsvector('english', heading), 'A') || to_tsvector('english', text)",
                persisted=True,
            ),
            nullable=False,
        ),
        sa.Column("embedding", Vector(384)),
    )
    op.create_index("kb_chunks_tsv", "kb_chunks", ["tsv"], postgresql_using="gin")
    op.create_index(
        "kb_chunks_embedding_hnsw",
        "kb_chunks",
        ["embedding"],
        postgresql_using="hnsw",
        postgresql_ops={"embedding": "vector_cosine_ops"},
    )
    op.create_index("kb_chunks_org", "kb_chunks", ["organization_id"])
    op.create_index("kb_chunks_document", "kb_chunks", ["document_id", "ordinal"])
    op.create_table(
        "processed_events",
        sa.Column("consumer", sa.Text, primary_key=True),
        sa.Column("event_id", sa.Text, primary_key=True),
        sa.Column("processed_at", sa.DateTime(timezone=True), nullable=False, server_default=NOW),
    )


def downgrade() -> None:
    for table in ("processed_events", "kb_chunks", "kb_documents", "org_members", "works", "organizations"):
        op.drop_table(table)
    op.execute("DROP TYPE IF EXISTS member_role")
