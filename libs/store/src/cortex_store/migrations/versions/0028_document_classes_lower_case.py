"""A document's class is lower-cased, as its tags are (0022): "Runbook" from one KB and "runbook" from another
are one Type value.

The contracts fold every class an event or a filter carries (stripped, lower case, then NFC) from now on;
this folds the classes already stored. Folded here in Python, as the contracts fold them: PostgreSQL's
`lower()` follows the database's locale, which under `C` leaves "É" as it is. Row-level security is forced on
the table, also for its owner, who binds no organization here: it is lifted for this transaction only.

Revision ID: 0028
Revises: 0027
"""

import unicodedata
import uuid

import sqlalchemy as sa
from alembic import op

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None

BATCH = 5000
CLASSED = sa.text(
    "SELECT id, doc_class FROM kb_documents WHERE doc_class IS NOT NULL AND id > :after ORDER BY id LIMIT :n"
)
SET_CLASS = sa.text("UPDATE kb_documents SET doc_class = :doc_class WHERE id = :id")


def folded(doc_class: str) -> str:
    return unicodedata.normalize("NFC", doc_class.strip().lower())


def upgrade() -> None:
    connection = op.get_bind()
    op.execute("ALTER TABLE kb_documents NO FORCE ROW LEVEL SECURITY")
    after = uuid.UUID(int=0)
    while rows := connection.execute(CLASSED, {"after": after, "n": BATCH}).all():
        after = rows[-1].id
        changed = [
            {"id": row.id, "doc_class": folded(row.doc_class)} for row in rows if folded(row.doc_class) != row.doc_class
        ]
        if changed:
            connection.execute(SET_CLASS, changed)
    op.execute("ALTER TABLE kb_documents FORCE ROW LEVEL SECURITY")


def downgrade() -> None:
    pass  # the spellings folded are gone; lower-cased classes are valid classes for the earlier revisions too
