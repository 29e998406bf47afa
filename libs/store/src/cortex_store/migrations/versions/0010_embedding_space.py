"""The embedding space: which model (and dimension) the stored embeddings were made with.

- `embedding_space`: one active row, seeded with what earlier versions embedded with
  (all-MiniLM-L6-v2, 384). The services read it (cortex_app: SELECT only): the indexer writes
  embeddings only in the active space, the aggregator skips the dense leg when its query model differs.
- `cortex_switch_embedding_space(model, dimension)`: the one way to change it, called by the indexer at
  start-up when its configured model differs. It runs as the tables' owner (SECURITY DEFINER), because
  only the owner may alter a column type, under a transaction advisory lock: it records the new space,
  clears every stored embedding (kb_chunks, memory_entry) and `kb_documents.embedded`, one organization
  at a time under its row-level-security binding, and when the dimension differs it alters both
  `embedding` columns to `vector(<dimension>)` and rebuilds their HNSW indexes (HNSW only indexes up to
  2,000 dimensions; above that the dense legs scan exactly). The indexer's backfill then re-embeds.
- Partial indexes on what still lacks an embedding, so the backfill finds its work without a scan.

Revision ID: 0010
Revises: 0009
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

APP_ROLE = "cortex_app"
SEED_MODEL = "all-MiniLM-L6-v2"
SEED_DIMENSION = 384
SWITCH_LOCK_KEY = 0x63786573  # "cxes"
HNSW_MAX_DIMENSION = 2000

SWITCH_FUNCTION = f"""
CREATE FUNCTION cortex_switch_embedding_space(p_model text, p_dimension integer) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    recorded embedding_space%ROWTYPE;
    had_space boolean;
    org uuid;
BEGIN
    IF p_model IS NULL OR p_model = '' OR p_dimension IS NULL OR p_dimension < 1 OR p_dimension > 16000 THEN
        RAISE EXCEPTION 'invalid embedding space: model %, dimension %', p_model, p_dimension;
    END IF;
    PERFORM pg_advisory_xact_lock({SWITCH_LOCK_KEY});
    SELECT * INTO recorded FROM embedding_space WHERE active FOR UPDATE;
    had_space := FOUND;
    IF had_space AND recorded.model = p_model AND recorded.dimension = p_dimension THEN
        RETURN false;
    END IF;
    UPDATE embedding_space SET active = false WHERE active;
    INSERT INTO embedding_space (model, dimension, active) VALUES (p_model, p_dimension, true);
    IF NOT had_space OR recorded.dimension <> p_dimension THEN
        DROP INDEX IF EXISTS kb_chunks_embedding_hnsw;
        DROP INDEX IF EXISTS memory_entry_embedding_hnsw;
        EXECUTE format('ALTER TABLE kb_chunks ALTER COLUMN embedding TYPE vector(%s) USING NULL', p_dimension);
        EXECUTE format('ALTER TABLE memory_entry ALTER COLUMN embedding TYPE vector(%s) USING NULL', p_dimension);
        -- a type change resets the column's storage; keep vectors in the row (migration 0009)
        ALTER TABLE kb_chunks ALTER COLUMN embedding SET STORAGE MAIN;
        IF p_dimension <= {HNSW_MAX_DIMENSION} THEN
            CREATE INDEX kb_chunks_embedding_hnsw ON kb_chunks USING hnsw (embedding vector_cosine_ops);
            CREATE INDEX memory_entry_embedding_hnsw ON memory_entry USING hnsw (embedding vector_cosine_ops);
        END IF;
    END IF;
    FOR org IN SELECT id FROM organizations LOOP
        PERFORM set_config('cortex.organization_id', org::text, true);
        UPDATE kb_chunks SET embedding = NULL WHERE organization_id = org AND embedding IS NOT NULL;
        UPDATE memory_entry SET embedding = NULL WHERE organization_id = org AND embedding IS NOT NULL;
        UPDATE kb_documents SET embedded = false WHERE organization_id = org AND embedded;
    END LOOP;
    PERFORM set_config('cortex.organization_id', '', true);
    RETURN true;
END $$
"""


def upgrade() -> None:
    op.create_table(
        "embedding_space",
        sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
        sa.Column("model", sa.Text, nullable=False),
        sa.Column("dimension", sa.Integer, nullable=False),
        sa.Column("active", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.text("now()")),
        sa.CheckConstraint("dimension > 0", name="embedding_space_dimension_positive"),
    )
    op.create_index("embedding_space_one_active", "embedding_space", ["active"], unique=True, postgresql_where="active")
    op.execute(
        f"INSERT INTO embedding_space (model, dimension, active) VALUES ('{SEED_MODEL}', {SEED_DIMENSION}, true)"
    )
    op.execute(f"REVOKE ALL ON embedding_space FROM {APP_ROLE}")
    op.execute(f"GRANT SELECT ON embedding_space TO {APP_ROLE}")
    op.execute(SWITCH_FUNCTION)
    op.execute("REVOKE ALL ON FUNCTION cortex_switch_embedding_space(text, integer) FROM PUBLIC")
    op.execute(f"GRANT EXECUTE ON FUNCTION cortex_switch_embedding_space(text, integer) TO {APP_ROLE}")
    op.execute("CREATE INDEX kb_chunks_unembedded ON kb_chunks (organization_id, id) WHERE embedding IS NULL")
    op.execute("CREATE INDEX memory_entry_unembedded ON memory_entry (organization_id, id) WHERE embedding IS NULL")


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS memory_entry_unembedded")
    op.execute("DROP INDEX IF EXISTS kb_chunks_unembedded")
    op.execute("DROP FUNCTION IF EXISTS cortex_switch_embedding_space(text, integer)")
    op.drop_table("embedding_space")
