"""A document whose change the vector store has not taken yet: `mirror_pending`.

With a vector store of its own (Qdrant), a deletion removes the document's points inside the
deletion's transaction. While the store cannot be reached that failed, the event was retried and
then dead-lettered, to be replayed by hand. Now the tombstone is committed and the document marked;
the indexer's backfill removes the points once the store answers, and clears the mark. Searches hide
the points meanwhile: every hit is read back from PostgreSQL, where the document is deleted.

Revision ID: 0019
Revises: 0018
"""

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("kb_documents", sa.Column("mirror_pending", sa.Boolean, nullable=False, server_default="false"))
    op.create_index(
        "kb_documents_mirror_pending",
        "kb_documents",
        ["organization_id", "id"],
        postgresql_where=sa.text("mirror_pending"),
    )


def downgrade() -> None:
    op.drop_index("kb_documents_mirror_pending", table_name="kb_documents")
    op.drop_column("kb_documents", "mirror_pending")
