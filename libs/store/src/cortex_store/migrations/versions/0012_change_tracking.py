"""Change tracking for the aggregator's in-memory facet index: which transaction last changed a row.

`changed_xid xid8` on `kb_documents` and the catalog tables the facets read (`works`, `missions`,
`teams`, `team_resources`), set by a BEFORE trigger to `pg_current_xact_id()` — the writing
transaction's own id, not a counter row (192 concurrent indexing transactions would queue on one).
On `kb_documents` it fires only when a column the facets or the feed order read is written (class,
Work, source, status, tags, updated_at, deleted_at): the backfill's `embedded` and the token counts
leave it alone. Rows written before this keep NULL: a reader loads them in full first.

A reader that recorded `pg_snapshot_xmin(pg_current_snapshot())` with its last read then reads
`changed_xid >= that xmin`. Every transaction below it had ended when that snapshot was taken, so its
rows were already read; every transaction at or above it — including one that got its id earlier but
commits later than another already read — is read again. xid8 never wraps, and its comparisons are
leakproof, so under row-level security `(organization_id, changed_xid)` is an index condition.

Documents and catalog rows are never deleted (tombstones keep `deleted_at`), so no delete trigger.

Revision ID: 0012
Revises: 0011
"""

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

TRACKED = ("kb_documents", "works", "missions", "teams", "team_resources")
# What the facet index holds of a document; other columns change without marking the row.
DOCUMENT_COLUMNS = ("organization_id", "doc_class", "work_id", "source", "status", "tags", "updated_at", "deleted_at")

MARK_FUNCTION = """
CREATE FUNCTION cortex_mark_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.changed_xid := pg_current_xact_id();
    RETURN NEW;
END $$
"""


def upgrade() -> None:
    op.execute(MARK_FUNCTION)
    for table in TRACKED:
        op.execute(f"ALTER TABLE {table} ADD COLUMN changed_xid xid8")
        op.execute(f"CREATE INDEX {table}_changed ON {table} (organization_id, changed_xid)")
        events = f"INSERT OR UPDATE OF {', '.join(DOCUMENT_COLUMNS)}" if table == "kb_documents" else "INSERT OR UPDATE"
        op.execute(
            f"CREATE TRIGGER {table}_changed BEFORE {events} ON {table} "
            "FOR EACH ROW EXECUTE FUNCTION cortex_mark_changed()"
        )


def downgrade() -> None:
    for table in TRACKED:
        op.execute(f"DROP TRIGGER IF EXISTS {table}_changed ON {table}")
        op.execute(f"DROP INDEX IF EXISTS {table}_changed")
        op.execute(f"ALTER TABLE {table} DROP COLUMN IF EXISTS changed_xid")
    op.execute("DROP FUNCTION IF EXISTS cortex_mark_changed()")
