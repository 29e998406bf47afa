"""Which vector store the documents are mirrored to: `vector_mirror`, one row.

With a vector store of its own (Qdrant) the indexer mirrors each document it indexes there. Switching
to Qdrant (or to another collection, server or embedding space) mirrored only what was indexed from then
on: the documents already there were never in the new store, and its dense leg missed them for good
(QA 40). The indexer now records the store it mirrors to; at start, finding another one recorded, it
empties its store and calls `cortex_mirror_to`, which marks every live document `mirror_pending`, for
the backfill to mirror (migration 0019), and records the new one. With pgvector the target is recorded
too, so that a later switch back to Qdrant mirrors what was indexed meanwhile.

Revision ID: 0025
Revises: 0024
"""

import sqlalchemy as sa
from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None

APP_ROLE = "cortex_app"

MIRROR_FUNCTION = """
CREATE FUNCTION cortex_mirror_to(p_target text, p_mirrored boolean) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    org uuid;
BEGIN
    IF p_mirrored THEN
        FOR org IN SELECT id FROM organizations LOOP
            PERFORM set_config('cortex.organization_id', org::text, true);
            UPDATE kb_documents SET mirror_pending = true
            WHERE organization_id = org AND deleted_at IS NULL AND NOT mirror_pending;
        END LOOP;
        PERFORM set_config('cortex.organization_id', '', true);
    END IF;
    INSERT INTO vector_mirror (only_row, target) VALUES (true, p_target)
    ON CONFLICT (only_row) DO UPDATE SET target = EXCLUDED.target, changed_at = now();
END $$
"""


def upgrade() -> None:
    op.create_table(
        "vector_mirror",
        sa.Column("only_row", sa.Boolean, primary_key=True, server_default=sa.true()),
        sa.Column("target", sa.Text, nullable=False),
        sa.Column("changed_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.text("now()")),
        sa.CheckConstraint("only_row", name="vector_mirror_one_row"),
    )
    op.execute(f"REVOKE ALL ON vector_mirror FROM {APP_ROLE}")
    op.execute(f"GRANT SELECT ON vector_mirror TO {APP_ROLE}")
    op.execute(MIRROR_FUNCTION)
    op.execute("REVOKE ALL ON FUNCTION cortex_mirror_to(text, boolean) FROM PUBLIC")
    op.execute(f"GRANT EXECUTE ON FUNCTION cortex_mirror_to(text, boolean) TO {APP_ROLE}")


def downgrade() -> None:
    op.execute("DROP FUNCTION IF EXISTS cortex_mirror_to(text, boolean)")
    op.drop_table("vector_mirror")
