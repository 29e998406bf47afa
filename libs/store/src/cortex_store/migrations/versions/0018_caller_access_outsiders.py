"""`cortex_caller_access` tells the gateway when the organization exists but the caller is not let in.

It returned no row both for a slug naming no organization and for a caller it does not let in, so the
gateway answered 404 to a revoked or unknown API key, as to a stranger. A key names its organization,
so for a key that does not work in its own organization 401 is the right answer (its credential is
not valid), and an agent holding one is no longer told the organization is missing. Now, when the
organization exists and no live membership or unrevoked key lets the caller in, the function returns
one row with the organization and no role. The gateway still answers 404 to a user who is not a member
and to a key naming another organization, so a stranger still cannot tell an existing organization
from a missing one.

Revision ID: 0018
Revises: 0017
"""

from alembic import op

from cortex_store.earlier_revisions import function

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

# Revision 0021 edited these, with 0011's text: the caller's binding is bound again at the end.
END_BEFORE = """    END IF;
    -- What the caller had bound"""
END_NOW = """    END IF;
    IF NOT FOUND THEN  -- the organization exists; this caller is not let in
        RETURN QUERY SELECT org.id, org.tenant_id, NULL::member_role, NULL::uuid;
    END IF;
    -- What the caller had bound"""


def _earlier() -> str:
    return function("0011_caller_access.py", "CALLER_ACCESS_FUNCTION")


def upgrade() -> None:
    earlier = _earlier()
    assert earlier.count(END_BEFORE) == 1, "the earlier revision's function is not the text this one edits"
    op.execute(earlier.replace(END_BEFORE, END_NOW))


def downgrade() -> None:
    op.execute(_earlier())
