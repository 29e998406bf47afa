"""The org feed: catalog read copy (missions, teams, team resources, member versions), uploads,
citations, provenance columns, facet indexes, API keys, and row-level security.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql as pg

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

NOW = sa.text("now()")
APP_ROLE = "cortex_app"
ORG_SETTING = "cortex.organization_id"
CURRENT_ORG = f"nullif(current_setting('{ORG_SETTING}', true), '')::uuid"
TENANT_TABLES = (
    "works",
    "missions",
    "teams",
    "team_resources",
    "org_members",
    "kb_documents",
    "kb_chunks",
    "kb_uploads",
    "kb_citations",
    "api_keys",
)


def _versioned() -> list[sa.Column[object]]:
    return [
        sa.Column("version", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False, server_default=NOW),
        sa.Column("deleted_at", sa.DateTime(timezone=True)),
    ]


def _org_column() -> sa.Column[object]:
    return sa.Column("organization_id", pg.UUID, sa.ForeignKey("organizations.id"), nullable=False)


def upgrade() -> None:
    op.add_column("works", sa.Column("deleted_at", sa.DateTime(timezone=True)))
    op.create_index("works_mission", "works", ["organization_id", "mission_id"])
    op.create_table(
        "missions",
        sa.Column("id", pg.UUID, primary_key=True),
        _org_column(),
        sa.Column("title", sa.Text, nullable=False),
        *_versioned(),
    )
    op.create_index("missions_org", "missions", ["organization_id"])
    op.create_table(
        "teams",
        sa.Column("id", pg.UUID, primary_key=True),
        _org_column(),
        sa.Column("name", sa.Text, nullable=False),
        *_versioned(),
    )
    op.create_index("teams_org", "teams", ["organization_id"])
    op.create_table(
        "team_resources",
        sa.Column("team_id", pg.UUID, nullable=False),
        _org_column(),
        sa.Column("resource_type", sa.Text, nullable=False),
        sa.Column("resource_id", pg.UUID, nullable=False),
        *_versioned(),
        sa.PrimaryKeyConstraint("team_id", "resource_type", "resource_id", name="team_resources_unique"),
    )
    # The Team facet is a reverse lookup: which Teams own this Work?
    op.create_index("team_resources_reverse", "team_resources", ["resource_type", "resource_id", "team_id"])
    op.add_column("org_members", sa.Column("version", sa.BigInteger, nullable=False, server_default="0"))
    op.add_column("org_members", sa.Column("deleted_at", sa.DateTime(timezone=True)))

    op.create_table(
        "kb_uploads",
        sa.Column("id", pg.UUID, primary_key=True),
        _org_column(),
        sa.Column("work_id", pg.UUID),
        sa.Column("filename", sa.Text, nullable=False),
        sa.Column("media_type", sa.Text, nullable=False),
        sa.Column("size_bytes", sa.BigInteger, nullable=False),
        sa.Column("object_bucket", sa.Text),
        sa.Column("object_name", sa.Text),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=NOW),
    )
    op.create_index("kb_uploads_org", "kb_uploads", ["organization_id"])
    op.create_table(
        "kb_citations",
        _org_column(),
        sa.Column("citing_id", pg.UUID, sa.ForeignKey("kb_documents.id", ondelete="CASCADE"), nullable=False),
        sa.Column("cited_id", pg.UUID, nullable=False),
        sa.PrimaryKeyConstraint("citing_id", "cited_id", name="kb_citations_pair"),
    )
    op.create_index("kb_citations_cited", "kb_citations", ["cited_id"])
    op.add_column("kb_documents", sa.Column("upload_id", pg.UUID))
    op.add_column("kb_documents", sa.Column("agent_id", sa.Text))
    op.add_column("kb_documents", sa.Column("agent_run_id", sa.Text))
    live = sa.text("deleted_at IS NULL")
    for column in ("doc_class", "work_id", "source", "status"):
        op.create_index(f"kb_documents_{column}", "kb_documents", ["organization_id", column], postgresql_where=live)
    op.create_index("kb_documents_tags", "kb_documents", ["tags"], postgresql_using="gin", postgresql_where=live)

    op.create_table(
        "api_keys",
        sa.Column("id", pg.UUID, primary_key=True),
        _org_column(),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("key_hash", sa.Text, nullable=False, unique=True),
        sa.Column("role", pg.ENUM("member", "admin", name="member_role", create_type=False), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=NOW),
        sa.Column("revoked_at", sa.DateTime(timezone=True)),
    )
    op.create_index("api_keys_org", "api_keys", ["organization_id"])
    _row_level_security()


def _row_level_security() -> None:
    """Forced RLS keyed on a per-transaction setting; the services connect as a role that owns nothing."""
    op.execute(f"""
        DO $$ BEGIN
            IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN
                CREATE ROLE {APP_ROLE} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
            END IF;
        END $$""")
    # Its password (CORTEX_APP_DB_PASSWORD) is set by cortex_store.migrate after every run.
    op.execute(f"GRANT USAGE ON SCHEMA public TO {APP_ROLE}")
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {APP_ROLE}")
    op.execute(f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {APP_ROLE}")
    op.execute(
        f"ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {APP_ROLE}"
    )
    op.execute(f"ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO {APP_ROLE}")
    for table in TENANT_TABLES:
        op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        op.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
        op.execute(
            f"CREATE POLICY tenant_isolation ON {table} "
            f"USING (organization_id = {CURRENT_ORG}) WITH CHECK (organization_id = {CURRENT_ORG})"
        )
    # Organizations: anyone may resolve a slug to an id (membership is checked next, under RLS);
    # only the bound organization's row can be changed.
    op.execute("ALTER TABLE organizations ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE organizations FORCE ROW LEVEL SECURITY")
    op.execute("CREATE POLICY resolve_slug ON organizations FOR SELECT USING (true)")
    op.execute(
        f"CREATE POLICY tenant_isolation ON organizations USING (id = {CURRENT_ORG}) WITH CHECK (id = {CURRENT_ORG})"
    )


def downgrade() -> None:
    for table in (*TENANT_TABLES, "organizations"):
        op.execute(f"DROP POLICY IF EXISTS tenant_isolation ON {table}")
        op.execute(f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY")
        op.execute(f"ALTER TABLE {table} DISABLE ROW LEVEL SECURITY")
    op.execute("DROP POLICY IF EXISTS resolve_slug ON organizations")
    op.drop_table("api_keys")
    for column in ("doc_class", "work_id", "source", "status", "tags"):
        op.drop_index(f"kb_documents_{column}", "kb_documents")
    for column in ("upload_id", "agent_id", "agent_run_id"):
        op.drop_column("kb_documents", column)
    op.drop_table("kb_citations")
    op.drop_table("kb_uploads")
    op.drop_column("org_members", "deleted_at")
    op.drop_column("org_members", "version")
    op.drop_table("team_resources")
    op.drop_table("teams")
    op.drop_table("missions")
    op.drop_index("works_mission", "works")
    op.drop_column("works", "deleted_at")
