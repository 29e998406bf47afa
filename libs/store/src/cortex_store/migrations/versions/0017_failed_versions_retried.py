"""A document stored as failed does not hold its version: the same event, replayed, is indexed again.

An upload whose file could not be read (missing, corrupt, encrypted) is stored as a `failed` document
and dead-lettered. `cortex dlq replay` sends the same event again once the cause is fixed (the file
uploaded at last), but the indexer dropped it silently: the event id was claimed in `processed_events`,
and the failed document's version was "not newer". Now:

- writing a failed document does not claim its event (an event that succeeded before is still skipped);
- a version is stale only when a stored version is newer, or equal and not `failed`.

So a replay (or a redelivery) of the failing event runs again: it indexes the document when the file
can now be read, or stores the failure again and dead-letters a new letter. Failures recorded before
this revision keep their claims, so their letters replay as before (dropped).

Revision ID: 0017
Revises: 0016
"""

from alembic import op

from cortex_store.earlier_revisions import function

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

STALE_BEFORE = "IF stored.version >= {version} THEN"
STALE_NOW = "IF stored.version > {version} OR (stored.version = {version} AND stored.status <> 'failed') THEN"

CLAIM_BEFORE = """\
    INSERT INTO processed_events (consumer, event_id) VALUES (p_consumer, p_event_id) ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
"""
CLAIM_NOW = """    -- A failure claims nothing: once its cause is fixed, the same event is written again.
    IF doc.status = 'failed' THEN
        IF EXISTS (SELECT 1 FROM processed_events WHERE consumer = p_consumer AND event_id = p_event_id) THEN
            RETURN false;
        END IF;
    ELSE
        INSERT INTO processed_events (consumer, event_id) VALUES (p_consumer, p_event_id) ON CONFLICT DO NOTHING;
        IF NOT FOUND THEN
            RETURN false;
        END IF;
    END IF;
"""


def _edited(text: str, edits: list[tuple[str, str]]) -> str:
    for before, now in edits:
        assert text.count(before) == 1, f"the earlier revision's function is not the text this one edits: {before!r}"
        text = text.replace(before, now)
    return text


def _prior_function() -> str:
    return _edited(
        function("0013_index_document_function.py", "PRIOR_FUNCTION"),
        [
            ("SELECT organization_id, version INTO stored", "SELECT organization_id, version, status INTO stored"),
            (STALE_BEFORE.format(version="p_version"), STALE_NOW.format(version="p_version")),
        ],
    )


def _index_function() -> str:
    return _edited(
        function("0014_ann_admission.py", "INDEX_FUNCTION"),
        [
            (CLAIM_BEFORE, CLAIM_NOW),
            ("SELECT organization_id, version INTO stored", "SELECT organization_id, version, status INTO stored"),
            (STALE_BEFORE.format(version="doc.version"), STALE_NOW.format(version="doc.version")),
        ],
    )


def upgrade() -> None:
    op.execute(_prior_function())
    op.execute(_index_function())


def downgrade() -> None:
    op.execute(function("0013_index_document_function.py", "PRIOR_FUNCTION"))
    op.execute(function("0014_ann_admission.py", "INDEX_FUNCTION"))
