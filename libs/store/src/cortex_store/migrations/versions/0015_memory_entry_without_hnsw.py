"""memory_entry loses its HNSW graph, which no statement walks.

Recall ranks the entries of its scope by exact distance (recall.py orders by `distance + 0`, so the
planner cannot take the index): a recall is bounded to one organization, usually to one conversation,
Work or agent too, and an HNSW walk under such a filter drops rows (pgvector 0.6 has no iterative scan).
Yet every remembered entry was inserted into the graph, one shared by all organizations: PostgreSQL's CPU
on every write, and the index's pages, for nothing: an insert took 2.9–3.3 ms with the graph against
0.5–0.7 ms without it (3,000 entries into a table of 3,000, measured side by side on this machine).
`cortex_switch_embedding_space` no longer builds it again after a change of dimension.

Revision ID: 0015
Revises: 0014
"""

from alembic import op

from cortex_store.earlier_revisions import statement

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

HNSW_MAX_DIMENSION = 2000
MEMORY_GRAPH = (
    "            CREATE INDEX memory_entry_embedding_hnsw ON memory_entry USING hnsw (embedding vector_cosine_ops);\n"
)


def _switch_function_of_0014() -> str:
    return statement("0014_ann_admission.py", "SWITCH_FUNCTION")


def upgrade() -> None:
    switch = _switch_function_of_0014()
    assert MEMORY_GRAPH in switch, "0014's switch function is not the text this revision edits"
    op.execute(switch.replace(MEMORY_GRAPH, ""))
    op.execute("DROP INDEX IF EXISTS memory_entry_embedding_hnsw")


def downgrade() -> None:
    op.execute(_switch_function_of_0014())
    # As 0014 left it: a graph whenever the column has a dimension HNSW can index.
    op.execute(f"""
        DO $$ BEGIN
            IF (SELECT atttypmod FROM pg_attribute
                WHERE attrelid = 'memory_entry'::regclass AND attname = 'embedding') BETWEEN 1 AND {HNSW_MAX_DIMENSION}
            THEN
                CREATE INDEX IF NOT EXISTS memory_entry_embedding_hnsw ON memory_entry
                    USING hnsw (embedding vector_cosine_ops);
            END IF;
        END $$""")
