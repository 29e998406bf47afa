"""Memory entries keep their metadata as JSON text (`json`), not as `jsonb`.

jsonb stores numbers as `numeric` and prints them without exponent: a float sent as `1e20` came back as
`100000000000000000000`, which every JSON reader takes for an integer (QA 36). The metadata is only stored
and returned, never queried, so nothing needs jsonb's operators: as text, `1e+20` stays a float and an
integer such as 2**64 + 1 stays exact. Rows stored before keep the digits jsonb printed.

Revision ID: 0023
Revises: 0022
"""

from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE memory_entry ALTER COLUMN metadata TYPE json USING metadata::json")


def downgrade() -> None:
    op.execute("ALTER TABLE memory_entry ALTER COLUMN metadata TYPE jsonb USING metadata::jsonb")
