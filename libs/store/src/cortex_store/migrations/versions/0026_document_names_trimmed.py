"""A document's title, class and source are kept without surrounding white space, as events now give them.

The contracts trim them from now on (a blank class is none, a blank title or source is refused); this
trims those already stored, which the Type and Source facets showed as values no filter could select
(`""`, `" spec "`). A blank title becomes "untitled", as an upload without one is titled, and a blank
source "kb", the contract's default. Trimmed here in Python, as the contracts trim (`str.strip`; blank as
their `is_blank` has it at this revision, zero-width characters included). Row-level security is forced on
the table, also for its owner, who binds no organization here: it is lifted for this transaction only.

Revision ID: 0026
Revises: 0025
"""

import unicodedata
import uuid

import sqlalchemy as sa
from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None

BATCH = 5000
UNTITLED = "untitled"
DEFAULT_SOURCE = "kb"
DOCUMENTS = sa.text(  # live ones: a tombstone keeps no names
    "SELECT id, title, doc_class, source FROM kb_documents"
    " WHERE id > :after AND deleted_at IS NULL ORDER BY id LIMIT :n"
)
SET_NAMES = sa.text("UPDATE kb_documents SET title = :title, doc_class = :doc_class, source = :source WHERE id = :id")


def is_blank(text: str) -> bool:
    return all(char.isspace() or unicodedata.category(char) in ("Cf", "Cc") for char in text)


def trimmed(title: str, doc_class: str | None, source: str) -> tuple[str, str | None, str]:
    return (
        UNTITLED if is_blank(title) else title.strip(),
        None if doc_class is None or is_blank(doc_class) else doc_class.strip(),
        DEFAULT_SOURCE if is_blank(source) else source.strip(),
    )


def upgrade() -> None:
    connection = op.get_bind()
    op.execute("ALTER TABLE kb_documents NO FORCE ROW LEVEL SECURITY")
    after = uuid.UUID(int=0)
    while rows := connection.execute(DOCUMENTS, {"after": after, "n": BATCH}).all():
        after = rows[-1].id
        changed = []
        for row in rows:
            title, doc_class, source = trimmed(row.title, row.doc_class, row.source)
            if (title, doc_class, source) != (row.title, row.doc_class, row.source):
                changed.append({"id": row.id, "title": title, "doc_class": doc_class, "source": source})
        if changed:
            connection.execute(SET_NAMES, changed)
    op.execute("ALTER TABLE kb_documents FORCE ROW LEVEL SECURITY")


def downgrade() -> None:
    pass  # the white space trimmed is gone; trimmed names are valid names for the earlier revisions too
