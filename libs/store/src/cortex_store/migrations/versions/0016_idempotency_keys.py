"""Idempotency keys: which note an `Idempotency-Key` made, and a hash of the request that made it.

A retry with the key and the same request gets the first note's id; the key with another request is
refused (422) instead of answering with a note whose content the caller never sent. Keys are per
caller and organization, under row-level security like the organization's other rows.

Revision ID: 0016
Revises: 0015
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql as pg

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

CURRENT_ORG = "nullif(current_setting('cortex.organization_id', true), '')::uuid"


def upgrade() -> None:
    op.create_table(
        "idempotency_keys",
        sa.Column("organization_id", pg.UUID, sa.ForeignKey("organizations.id"), nullable=False),
        sa.Column("principal", sa.Text, nullable=False),
        sa.Column("key", sa.Text, nullable=False),
        sa.Column("request_sha256", sa.Text, nullable=False),
        sa.Column("document_id", pg.UUID, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.text("now()")),
        sa.PrimaryKeyConstraint("organization_id", "principal", "key", name="idempotency_keys_pk"),
    )
    # cortex_app's table privileges come from 0002's default privileges; the policy is the tenant wall.
    op.execute("ALTER TABLE idempotency_keys ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE idempotency_keys FORCE ROW LEVEL SECURITY")
    op.execute(
        "CREATE POLICY tenant_isolation ON idempotency_keys "
        f"USING (organization_id = {CURRENT_ORG}) WITH CHECK (organization_id = {CURRENT_ORG})"
    )


def downgrade() -> None:
    op.drop_table("idempotency_keys")
