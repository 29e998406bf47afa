"""Plugin choices: each organization's active plugin per category, under row-level security.

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql as pg

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

CURRENT_ORG = "nullif(current_setting('cortex.organization_id', true), '')::uuid"


def upgrade() -> None:
    op.create_table(
        "plugin_choices",
        sa.Column("organization_id", pg.UUID, sa.ForeignKey("organizations.id"), nullable=False),
        sa.Column("category", sa.Text, nullable=False),
        sa.Column("plugin", sa.Text, nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.text("now()")),
        sa.PrimaryKeyConstraint("organization_id", "category", name="plugin_choices_pk"),
    )
    # cortex_app's table privileges come from 0002's default privileges; the policy is the tenant wall.
    op.execute("ALTER TABLE plugin_choices ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE plugin_choices FORCE ROW LEVEL SECURITY")
    op.execute(
        "CREATE POLICY tenant_isolation ON plugin_choices "
        f"USING (organization_id = {CURRENT_ORG}) WITH CHECK (organization_id = {CURRENT_ORG})"
    )


def downgrade() -> None:
    op.drop_table("plugin_choices")
