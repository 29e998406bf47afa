"""No function pins `cortex.organization_id`: a managed database's owner can run every migration.

Four functions were created with `SET cortex.organization_id = ''` (`cortex_caller_access`,
`cortex_document_prior`, `cortex_index_document`, `cortex_enter_ann`): the clause restored the caller's
binding when the call ended. PostgreSQL 15+ lets only a superuser, or a role granted `SET` on that
parameter, create a function that pins a setting no extension defines, and the managed services' admin
roles are neither and often cannot grant it: `cortex migrate` failed there at revision 0011.

The revisions that created them (0011, 0013, 0014, and 0018's edit) were edited, though released,
since as written they cannot run for such an owner; this one removes the clause where they had already
run with it, and creates `cortex_caller_access` again as those now do.
- `cortex_caller_access` (SECURITY DEFINER, and called by the gateway) saves the caller's binding and binds
  it again before it returns, as the clause did.
- The indexer's three bind the organization as their first step and leave it bound until the caller's
  transaction ends, which is what their callers want: each calls them alone, in autocommit, or in a
  transaction bound to that same organization (the Qdrant path, the ANN admission).

Revision ID: 0021
Revises: 0020
"""

from alembic import op

from cortex_store.earlier_revisions import function, statement

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

# `ALTER FUNCTION … RESET` needs the same privilege as the clause: only where the clause is.
UNPIN = """
DO $$
DECLARE
    pinned regprocedure;
BEGIN
    FOR pinned IN
        SELECT p.oid::regprocedure FROM pg_proc p
        WHERE p.proname IN ('cortex_caller_access', 'cortex_document_prior', 'cortex_index_document',
                            'cortex_enter_ann')
          AND EXISTS (SELECT 1 FROM unnest(p.proconfig) setting WHERE setting LIKE 'cortex.organization_id=%')
    LOOP
        EXECUTE format('ALTER FUNCTION %s RESET "cortex.organization_id"', pinned);
    END LOOP;
END $$
"""


def _caller_access() -> str:
    """As revision 0018 made it, from the texts as edited."""
    earlier = function("0011_caller_access.py", "CALLER_ACCESS_FUNCTION")
    before, now = (statement("0018_caller_access_outsiders.py", name) for name in ("END_BEFORE", "END_NOW"))
    assert earlier.count(before) == 1, "the earlier revision's function is not the text this one edits"
    return earlier.replace(before, now)


def upgrade() -> None:
    op.execute(UNPIN)
    op.execute(_caller_access())  # where it ran without the clause's restore, with it


def downgrade() -> None:
    pass  # revision 0020, as edited, pins nothing either, and its `cortex_caller_access` is this one
