"""Search read paths: the lexical leg reads only its query words' postings, from the index alone; the
dense leg reads embeddings stored in the row.

- `kb_postings_pk` carries `document_id`, `tf` and `document_tokens` (INCLUDE), so BM25 reads a query
  word's postings by an index-only scan instead of one heap fetch per posting.
- `kb_chunks.embedding` is stored MAIN: kept in the row (other columns are moved out first), so the
  exact scan does not fetch every vector from the TOAST table. Rows written before this keep their
  storage until they are rewritten (re-indexed).
- `kb_chunks_embedded` (partial, organization id) lets the aggregator count an org's embedded chunks,
  up to the exact-scan bound, from the index alone.

Revision ID: 0009
Revises: 0008
"""

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE kb_postings DROP CONSTRAINT kb_postings_pk")
    op.execute(
        "ALTER TABLE kb_postings ADD CONSTRAINT kb_postings_pk "
        "PRIMARY KEY (organization_id, lexeme, chunk_id) INCLUDE (document_id, tf, document_tokens)"
    )
    op.execute("ALTER TABLE kb_chunks ALTER COLUMN embedding SET STORAGE MAIN")
    op.execute("CREATE INDEX kb_chunks_embedded ON kb_chunks (organization_id) WHERE embedding IS NOT NULL")


def downgrade() -> None:
    op.execute("DROP INDEX kb_chunks_embedded")
    op.execute("ALTER TABLE kb_chunks ALTER COLUMN embedding SET STORAGE EXTERNAL")
    op.execute("ALTER TABLE kb_postings DROP CONSTRAINT kb_postings_pk")
    op.execute("ALTER TABLE kb_postings ADD CONSTRAINT kb_postings_pk PRIMARY KEY (organization_id, lexeme, chunk_id)")
