"""Extraction failures: a document whose uploaded file could not be read keeps the reason.

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("kb_documents", sa.Column("failure_reason", sa.Text))


def downgrade() -> None:
    op.drop_column("kb_documents", "failure_reason")
