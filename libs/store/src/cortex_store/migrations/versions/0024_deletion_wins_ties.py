"""A deletion wins a tie of versions, and a deleted document is never written again at its version.

A deletion of the version that is stored changed nothing (it had to be higher): a KB service that deletes
a document at the version it has — the natural thing to send — left it searchable, and a document at
version 2^63−1 could never be deleted. Now a deletion at the stored version removes it (the indexer's
check, `deletion_applies`), and these functions treat a deleted version as stale for an upsert of the
same version, whatever the order the two arrive in.

They also checked only the status: a document stored as `failed` keeps that status when it is deleted, so
an upsert at the deletion's version (a replay, say) brought the deleted document back. Now a deleted
row is stale at its version whatever its status.

Revision ID: 0024
Revises: 0023
"""

from alembic import op

from cortex_store.earlier_revisions import revision as earlier

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None

SELECT_BEFORE = "SELECT organization_id, version, status INTO stored"
SELECT_NOW = "SELECT organization_id, version, status, deleted_at INTO stored"
STALE_BEFORE = "IF stored.version > {version} OR (stored.version = {version} AND stored.status <> 'failed') THEN"
STALE_NOW = (
    "IF stored.version > {version} OR (stored.version = {version} AND "
    "(stored.status <> 'failed' OR stored.deleted_at IS NOT NULL)) THEN"
)


def _edited(text: str, version: str) -> str:
    for before, now in [
        (SELECT_BEFORE, SELECT_NOW),
        (STALE_BEFORE.format(version=version), STALE_NOW.format(version=version)),
    ]:
        assert text.count(before) == 1, f"the earlier revision's function is not the text this one edits: {before!r}"
        text = text.replace(before, now)
    return text


def upgrade() -> None:
    as_0017 = earlier("0017_failed_versions_retried.py")
    op.execute(_edited(as_0017._prior_function(), "p_version"))
    op.execute(_edited(as_0017._index_function(), "doc.version"))


def downgrade() -> None:
    as_0017 = earlier("0017_failed_versions_retried.py")
    op.execute(as_0017._prior_function())
    op.execute(as_0017._index_function())
