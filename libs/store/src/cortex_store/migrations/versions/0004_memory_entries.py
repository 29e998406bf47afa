"""Agent memory entries: partitions, tiers, scope ids, salience, content hash, lexical and dense vectors.

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op
from pgvector.sqlalchemy import Vector
from sqlalchemy.dialects import postgresql as pg

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

NOW = sa.text("now()")
CURRENT_ORG = "nullif(current_setting('cortex.organization_id', true), '')::uuid"


def upgrade() -> None:
    partition = pg.ENUM("working", "episodic", "semantic", "procedural", "user-model", name="memory_partition")
    tier = pg.ENUM("session", "work", "org", "global", name="memory_tier")
    op.create_table(
        "memory_entry",
        sa.Column("id", pg.UUID, primary_key=True),
        sa.Column("organization_id", pg.UUID, sa.ForeignKey("organizations.id"), nullable=False),
        sa.Column("tenant_id", sa.Text),
        sa.Column("partition", partition, nullable=False),
        sa.Column("tier", tier, nullable=False),
        sa.Column("work_id", pg.UUID),
        sa.Column("memory_session_id", sa.Text),
        sa.Column("agent_id", sa.Text),
        sa.Column("agent_run_id", sa.Text),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("content_hash", sa.Text, nullable=False),
        sa.Column("metadata", pg.JSONB),
        sa.Column("salience", sa.Float, nullable=False, server_default="0.5"),
        sa.Column("access_count", sa.Integer, nullable=False, server_default="0"),
        sa.Column("last_accessed_at", sa.DateTime(timezone=True)),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=NOW),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False, server_default=NOW),
        sa.Column("tsv", pg.TSVECTOR, sa.Computed("to_tsvector('english', content)", persisted=True), nullable=False),
        sa.Column("embedding", Vector(384)),
        sa.Column("embedding_input", sa.Text),
        sa.Column("token_count", sa.Integer, nullable=False, server_default="0"),
    )
    op.create_index("memory_entry_tsv", "memory_entry", ["tsv"], postgresql_using="gin")
    op.create_index(
        "memory_entry_embedding_hnsw",
        "memory_entry",
        ["embedding"],
        postgresql_using="hnsw",
        postgresql_ops={"embedding": "vector_cosine_ops"},
    )
    op.create_index("memory_entry_session", "memory_entry", ["organization_id", "memory_session_id", "created_at"])
    op.create_index("memory_entry_work", "memory_entry", ["organization_id", "work_id"])
    op.execute("ALTER TABLE memory_entry ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE memory_entry FORCE ROW LEVEL SECURITY")
    op.execute(
        f"CREATE POLICY tenant_isolation ON memory_entry "
        f"USING (organization_id = {CURRENT_ORG}) WITH CHECK (organization_id = {CURRENT_ORG})"
    )


def downgrade() -> None:
    op.drop_table("memory_entry")
    op.execute("DROP TYPE IF EXISTS memory_partition")
    op.execute("DROP TYPE IF EXISTS memory_tier")
