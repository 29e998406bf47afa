"""Memory entry ids are unique within an organization, not across all of them.

An entry's id derives from its organization, scope and content, but an event may carry any `entryId`.
With the id unique across the database, one organization's event that reused another's id (predictable
from that organization's id and the content) was refused, which told the publisher that the other
organization holds that memory, and blocked the other organization from ever storing it. The primary
key is now (organization_id, id): each organization's ids are its own.

Revision ID: 0020
Revises: 0019
"""

from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.drop_constraint("memory_entry_pkey", "memory_entry", type_="primary")
    op.create_primary_key("memory_entry_pkey", "memory_entry", ["organization_id", "id"])


def downgrade() -> None:
    # Fails if two organizations now hold the same id, as it must: the old key cannot hold both.
    op.drop_constraint("memory_entry_pkey", "memory_entry", type_="primary")
    op.create_primary_key("memory_entry_pkey", "memory_entry", ["id"])
