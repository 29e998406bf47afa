"""Document tags as rows, and a narrow covering index for the facets.

The feed's tag filter was `tags && ARRAY[…]`. Under row-level security only LEAKPROOF operators may be
index conditions, and array overlap is not one, so the service role never used the GIN index on `tags`
and every tag filter read all of an organization's documents. `kb_document_tags` holds one row per
(organization, tag, document), written by the indexer with the document; a tag filter is a text
equality on its primary key, which is leakproof. The GIN index, which that role can never use, goes.

`kb_documents_facets` holds every column the facet counts group by or test, so counting reads the
index only, not the documents' bodies; led by the class, it also serves a type filter as a range.

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql as pg

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

CURRENT_ORG = "nullif(current_setting('cortex.organization_id', true), '')::uuid"
LIVE = sa.text("deleted_at IS NULL")


def upgrade() -> None:
    op.create_table(
        "kb_document_tags",
        sa.Column("organization_id", pg.UUID, nullable=False),
        sa.Column("tag", sa.Text, nullable=False),
        sa.Column("document_id", pg.UUID, sa.ForeignKey("kb_documents.id", ondelete="CASCADE"), nullable=False),
        sa.PrimaryKeyConstraint("organization_id", "tag", "document_id", name="kb_document_tags_pk"),
    )
    op.create_index("kb_document_tags_document", "kb_document_tags", ["document_id"])
    op.execute("""
        INSERT INTO kb_document_tags (organization_id, tag, document_id)
        SELECT DISTINCT d.organization_id, t.tag, d.id FROM kb_documents d, unnest(d.tags) AS t(tag)
    """)
    op.execute("ALTER TABLE kb_document_tags ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE kb_document_tags FORCE ROW LEVEL SECURITY")
    op.execute(
        "CREATE POLICY tenant_isolation ON kb_document_tags "
        f"USING (organization_id = {CURRENT_ORG}) WITH CHECK (organization_id = {CURRENT_ORG})"
    )
    op.drop_index("kb_documents_tags", "kb_documents")
    op.create_index(
        "kb_documents_facets",
        "kb_documents",
        ["organization_id", "doc_class"],
        postgresql_include=["work_id", "source", "status", "tags"],
        postgresql_where=LIVE,
    )


def downgrade() -> None:
    op.drop_index("kb_documents_facets", "kb_documents")
    op.create_index("kb_documents_tags", "kb_documents", ["tags"], postgresql_using="gin", postgresql_where=LIVE)
    op.drop_table("kb_document_tags")
