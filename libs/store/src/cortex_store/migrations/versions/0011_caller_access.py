"""Who may call, in one statement: `cortex_caller_access(slug, user_id, key_hash)`.

The gateway authenticates every request. It used to take two transactions (resolve the slug, then
bind the organization and read the membership or API key), about seven round trips to PostgreSQL.
This function does both in one call, so the gateway needs one statement on an autocommit connection:

- it resolves the slug; no such organization → no row;
- it binds that organization (`cortex.organization_id`, as `cortex_store.tenancy` does) before it reads
  `org_members` or `api_keys`, so their row-level security still applies, and binds again what the
  caller had bound before it returns (nothing outlives the call, on a pooled connection or in the
  caller's transaction). Revision 0021 edited this text: a `SET cortex.organization_id = ''` clause did
  that, but PostgreSQL 15+ lets only a superuser (or a role granted it) create a function that pins a
  setting no extension defines, so this migration failed for a managed database's owner;
- it returns the organization's id and tenant and the caller's role (and the key's id for an API
  key) for a live membership (`deleted_at IS NULL`) or an unrevoked key; anything else → no row, so a
  non-member cannot tell an existing organization from a missing one.

Exactly one of `p_user_id` (a verified token's subject) and `p_key_hash` (SHA-256 of an API key) is
given. It runs as the tables' owner (SECURITY DEFINER, `search_path` pinned), so `cortex_app` may
execute it and nothing more: it still cannot read another organization's members or keys itself.

Revision ID: 0011
Revises: 0010
"""

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

APP_ROLE = "cortex_app"
SIGNATURE = "cortex_caller_access(text, text, text)"

CALLER_ACCESS_FUNCTION = """
CREATE FUNCTION cortex_caller_access(p_slug text, p_user_id text, p_key_hash text)
RETURNS TABLE (organization_id uuid, tenant_id text, role member_role, api_key_id uuid)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
DECLARE
    org organizations%ROWTYPE;
    caller_binding text := coalesce(current_setting('cortex.organization_id', true), '');
BEGIN
    IF (p_user_id IS NULL) = (p_key_hash IS NULL) THEN
        RAISE EXCEPTION 'cortex_caller_access needs exactly one of a user id and an API key hash';
    END IF;
    SELECT o.* INTO org FROM organizations o WHERE o.slug = p_slug;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    PERFORM set_config('cortex.organization_id', org.id::text, true);
    IF p_user_id IS NOT NULL THEN
        RETURN QUERY
            SELECT org.id, org.tenant_id, m.role, NULL::uuid
            FROM org_members m
            WHERE m.organization_id = org.id AND m.user_id = p_user_id AND m.deleted_at IS NULL;
    ELSE
        RETURN QUERY
            SELECT org.id, org.tenant_id, k.role, k.id
            FROM api_keys k
            WHERE k.organization_id = org.id AND k.key_hash = p_key_hash AND k.revoked_at IS NULL;
    END IF;
    -- What the caller had bound, bound again (an assignment, which leaves FOUND as RETURN QUERY set it).
    caller_binding := set_config('cortex.organization_id', caller_binding, true);
END $$
"""


def upgrade() -> None:
    op.execute(CALLER_ACCESS_FUNCTION)
    op.execute(f"REVOKE ALL ON FUNCTION {SIGNATURE} FROM PUBLIC")
    op.execute(f"GRANT EXECUTE ON FUNCTION {SIGNATURE} TO {APP_ROLE}")


def downgrade() -> None:
    op.execute(f"DROP FUNCTION IF EXISTS {SIGNATURE}")
