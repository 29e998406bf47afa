"""BM25 for the lexical leg: token counts and a postings table (lexeme → chunk, term frequency).

PostgreSQL's `ts_rank` has no inverse document frequency and no length normalization of the BM25 kind
(it loses ~16% nDCG on public benchmarks); these let the aggregator score real BM25 in SQL.

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql as pg

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

CURRENT_ORG = "nullif(current_setting('cortex.organization_id', true), '')::uuid"


def upgrade() -> None:
    op.add_column("kb_chunks", sa.Column("token_count", sa.Integer, nullable=False, server_default="0"))
    op.add_column("kb_documents", sa.Column("token_count", sa.Integer, nullable=False, server_default="0"))
    op.create_table(
        "kb_postings",
        sa.Column("organization_id", pg.UUID, nullable=False),
        sa.Column("lexeme", sa.Text, nullable=False),
        sa.Column("chunk_id", sa.BigInteger, sa.ForeignKey("kb_chunks.id", ondelete="CASCADE"), nullable=False),
        sa.Column("document_id", pg.UUID, nullable=False),
        sa.Column("tf", sa.Integer, nullable=False),
        sa.Column("document_tokens", sa.Integer, nullable=False),
        sa.PrimaryKeyConstraint("organization_id", "lexeme", "chunk_id", name="kb_postings_pk"),
    )
    op.create_index("kb_postings_chunk", "kb_postings", ["chunk_id"])
    # BM25's corpus statistics (document count, mean length) read from the index alone.
    op.create_index(
        "kb_documents_org_tokens",
        "kb_documents",
        ["organization_id"],
        postgresql_include=["token_count"],
        postgresql_where=sa.text("deleted_at IS NULL"),
    )
    # Backfill what earlier versions indexed.
    op.execute("""
        UPDATE kb_chunks c SET token_count = coalesce(
            (SELECT sum(array_length(u.positions, 1)) FROM unnest(c.tsv) u), 0)
    """)
    op.execute("""
        UPDATE kb_documents d SET token_count = coalesce(
            (SELECT sum(c.token_count) FROM kb_chunks c WHERE c.document_id = d.id), 0)
    """)
    op.execute("""
        INSERT INTO kb_postings (organization_id, lexeme, chunk_id, document_id, tf, document_tokens)
        SELECT c.organization_id, u.lexeme, c.id, c.document_id, coalesce(array_length(u.positions, 1), 1),
               d.token_count
        FROM kb_chunks c JOIN kb_documents d ON d.id = c.document_id, unnest(c.tsv) u
    """)
    op.execute("ALTER TABLE kb_postings ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE kb_postings FORCE ROW LEVEL SECURITY")
    op.execute(
        f"CREATE POLICY tenant_isolation ON kb_postings "
        f"USING (organization_id = {CURRENT_ORG}) WITH CHECK (organization_id = {CURRENT_ORG})"
    )


def downgrade() -> None:
    op.drop_table("kb_postings")
    op.drop_index("kb_documents_org_tokens", "kb_documents")
    op.drop_column("kb_documents", "token_count")
    op.drop_column("kb_chunks", "token_count")
