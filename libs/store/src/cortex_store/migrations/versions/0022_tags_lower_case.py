"""Tags are lower-cased: "Billing" from one Work's KB and "billing" from another's are one tag.

The contracts fold every tag an event or a request carries (lower case, then NFC) from now on; this folds
the tags already stored, in `kb_documents.tags` (each tag where its first spelling was, duplicates
dropped) and in `kb_document_tags`. Folded here in Python, as the contracts fold them: PostgreSQL's
`lower()` follows the database's locale, which under `C` leaves "É" as it is. Row-level security is
forced on both tables, also for their owner, who binds no organization here: it is lifted for this
transaction only.

Revision ID: 0022
Revises: 0021
"""

import unicodedata
import uuid

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None

TABLES = ("kb_documents", "kb_document_tags")
BATCH = 5000
TAGGED = sa.text(
    "SELECT id, organization_id, tags FROM kb_documents WHERE tags <> '{}' AND id > :after ORDER BY id LIMIT :n"
)
SET_TAGS = sa.text("UPDATE kb_documents SET tags = :tags WHERE id = :id")
DROP_ROWS = sa.text("DELETE FROM kb_document_tags WHERE document_id = :id")
ADD_ROW = sa.text(
    "INSERT INTO kb_document_tags (organization_id, tag, document_id) VALUES (:org, :tag, :id) ON CONFLICT DO NOTHING"
)


def folded(tags: list[str]) -> list[str]:
    return list(dict.fromkeys(unicodedata.normalize("NFC", tag.lower()) for tag in tags))


def upgrade() -> None:
    connection = op.get_bind()
    for table in TABLES:
        op.execute(f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY")
    after = uuid.UUID(int=0)
    while rows := connection.execute(TAGGED, {"after": after, "n": BATCH}).all():
        after = rows[-1].id
        changed = [(row, tags) for row in rows if (tags := folded(row.tags)) != row.tags]
        if not changed:
            continue
        connection.execute(SET_TAGS, [{"id": row.id, "tags": tags} for row, tags in changed])
        connection.execute(DROP_ROWS, [{"id": row.id} for row, _ in changed])
        added = [{"org": row.organization_id, "tag": tag, "id": row.id} for row, tags in changed for tag in tags]
        connection.execute(ADD_ROW, added)
    for table in TABLES:
        op.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")


def downgrade() -> None:
    pass  # the spellings folded are gone; lower-cased tags are valid tags for the earlier revisions too
