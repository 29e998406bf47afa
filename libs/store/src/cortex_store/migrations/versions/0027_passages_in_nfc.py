"""Passages stored before the chunker kept text in Unicode NFC are folded to NFC, with their BM25 postings.

Queries are read in NFC since; a passage stored with a combining accent ("cafe" + U+0301) had lexemes no
query could match any more, so its document was found by the dense leg only, until its next version.
Here each such document's passages take their NFC text and heading (their generated `tsv` follows), their
content hash as the chunker now gives it (so an edit reuses their embeddings), and their token counts and
postings anew, by the rules of `cortex_index_document` (0013): a heading counts in the first passage under
it only. Embeddings stay: the local model folds accents itself, and a passage's meaning is unchanged.

Unicode normalization in SQL needs a UTF-8 database; in another encoding there is nothing to do here
(text outside it could not be stored). Row-level security is forced on these tables, also for their
owner, who binds no organization here: it is lifted for this transaction only.

Revision ID: 0027
Revises: 0026
"""

from alembic import op

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None

TABLES = ("kb_documents", "kb_chunks", "kb_postings")
NOT_NFC = "(text IS NOT NFC NORMALIZED OR heading IS NOT NFC NORMALIZED)"

FOLD = f"""
UPDATE kb_chunks
SET heading = normalize(heading, NFC), text = normalize(text, NFC),
    content_hash = encode(sha256(convert_to(normalize(heading, NFC) || E'\\n' || normalize(text, NFC), 'UTF8')), 'hex')
WHERE document_id IN (SELECT document_id FROM cortex_refolded) AND {NOT_NFC}
"""
# Whether a passage's heading counts in BM25: it is the document's first, or its heading is not the one before.
HEADED = """
SELECT id, ordinal = 0 OR heading IS DISTINCT FROM lag(heading) OVER (PARTITION BY document_id ORDER BY ordinal)
       AS heading_counts
FROM kb_chunks WHERE document_id IN (SELECT document_id FROM cortex_refolded)
"""
COUNT_TOKENS = f"""
UPDATE kb_chunks c
SET token_count = (SELECT count(*)::integer FROM unnest(c.tsv) u, unnest(u.weights) w
                   WHERE w <> 'A' OR h.heading_counts)
FROM ({HEADED}) h WHERE c.id = h.id
"""
DOCUMENT_TOKENS = """
UPDATE kb_documents d
SET token_count = coalesce((SELECT sum(c.token_count) FROM kb_chunks c WHERE c.document_id = d.id), 0)
WHERE d.id IN (SELECT document_id FROM cortex_refolded)
"""
POSTINGS = f"""
INSERT INTO kb_postings (organization_id, lexeme, chunk_id, document_id, tf, document_tokens)
SELECT c.organization_id, u.lexeme, c.id, c.document_id, t.tf, d.token_count
FROM ({HEADED}) h
JOIN kb_chunks c ON c.id = h.id
JOIN kb_documents d ON d.id = c.document_id,
     unnest(c.tsv) u,
     LATERAL (SELECT count(*)::integer AS tf FROM unnest(u.weights) w WHERE w <> 'A' OR h.heading_counts) t
WHERE t.tf > 0
"""


def upgrade() -> None:
    connection = op.get_bind()
    if connection.exec_driver_sql("SHOW server_encoding").scalar() != "UTF8":
        return
    for table in TABLES:
        op.execute(f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY")
    op.execute(f"CREATE TEMP TABLE cortex_refolded AS SELECT DISTINCT document_id FROM kb_chunks WHERE {NOT_NFC}")
    op.execute(FOLD)
    op.execute(COUNT_TOKENS)
    op.execute(DOCUMENT_TOKENS)
    op.execute("DELETE FROM kb_postings WHERE document_id IN (SELECT document_id FROM cortex_refolded)")
    op.execute(POSTINGS)
    op.execute("DROP TABLE cortex_refolded")
    for table in TABLES:
        op.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")


def downgrade() -> None:
    pass  # the decomposed spellings are gone; NFC passages are valid passages for the earlier revisions too
