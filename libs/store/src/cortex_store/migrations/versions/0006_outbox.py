"""Transactional outbox: events a handler wants to publish are written in its transaction, so a crash
between the commit and the publish cannot lose them.

Plumbing, like processed_events: no row-level security (the relay sends every organization's events).

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "outbox",
        sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
        sa.Column("subject", sa.Text, nullable=False),
        sa.Column("message_id", sa.Text, nullable=False),
        sa.Column("payload", sa.LargeBinary, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.text("now()")),
    )
    op.create_index("outbox_message", "outbox", ["message_id"])


def downgrade() -> None:
    op.drop_table("outbox")
