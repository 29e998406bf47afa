"""Index a document in one statement: `cortex_document_prior` and `cortex_index_document`.

The indexer wrote a new document in two transactions of about twenty statements, each a round trip
with its own parse, plan and Python around it; on bench/ingest that overhead, not the embedding, was
what kept the pipeline below the bare model's rate. These functions do the same work inside
PostgreSQL, so the indexer calls each once, on an autocommit connection:

- `cortex_document_prior(consumer, event_id, organization, document, version, want_embeddings)`, the
  cheap read before embedding: NULL when the event is stale (handled before, or not newer than the
  stored version), else the stored passages' embeddings by content hash (`{}` for a new document, or
  when not wanted), so an edit embeds only the passages it changed.
- `cortex_index_document(...)`: what `cortex_indexer.indexing.index_document` did in its transaction —
  claim the event, lock the document id, compare versions, upsert the upload and the document, replace
  its tags, citations, passages and BM25 postings, and stage the `document.indexed` report in the
  outbox. True when written; false for a duplicate event or a version not newer than the stored one.

Both run as the caller (row-level security applies) and bind the document's organization until the
caller's transaction ends: call them alone (autocommit, as the indexer does) or in a transaction bound to
that organization. (Revision 0021 edited this text: a `SET` clause that confined the binding to the call
needs a superuser to create on PostgreSQL 15+.) Refusals raise with their
own SQLSTATE, which the indexer maps: `CXORG` unknown organization (retried: catalog events race KB
events), `CXOWN` the id is another organization's document (dead-lettered), `CXSPC` the index moved to
another embedding space (written again lexical-only).

The passages' embeddings travel as one flat `real[]`, `p_dimension` values each (NULLs for a passage
stored lexical-only): binary floats, where text literals cost the indexer a float-to-text conversion
of every value and PostgreSQL the parse back.

A passage's heading counts in BM25 in the first passage under it only (as in migration 0003): the
arrays are in ordinal order, so that is "the first element, or a heading unlike the one before".

`kb_chunks_tsv`, a GIN index no query has read since the BM25 postings (0003), goes: every passage
written paid for its ~60 entries.

Revision ID: 0013
Revises: 0012
"""

from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

SWITCH_LOCK_KEY = 0x63786573  # cortex_switch_embedding_space's lock (0010), taken shared by writers

PRIOR_FUNCTION = """
CREATE FUNCTION cortex_document_prior(
    p_consumer text, p_event_id text, p_organization uuid, p_document uuid, p_version bigint,
    p_want_embeddings boolean
) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
    stored record;
BEGIN
    PERFORM set_config('cortex.organization_id', p_organization::text, true);
    IF EXISTS (SELECT 1 FROM processed_events WHERE consumer = p_consumer AND event_id = p_event_id) THEN
        RETURN NULL;
    END IF;
    SELECT organization_id, version INTO stored FROM kb_documents WHERE id = p_document;
    IF NOT FOUND THEN
        RETURN '{}'::jsonb;
    END IF;
    IF stored.organization_id <> p_organization THEN
        RAISE EXCEPTION 'document id already belongs to another organization' USING ERRCODE = 'CXOWN';
    END IF;
    IF stored.version >= p_version THEN
        RETURN NULL;
    END IF;
    IF NOT p_want_embeddings THEN
        RETURN '{}'::jsonb;
    END IF;
    RETURN coalesce(
        (SELECT jsonb_object_agg(content_hash, to_jsonb(embedding::real[]))
         FROM kb_chunks WHERE document_id = p_document AND embedding IS NOT NULL),
        '{}'::jsonb);
END $$
"""

INDEX_FUNCTION = f"""
CREATE FUNCTION cortex_index_document(
    p_consumer text, p_event_id text, p_document jsonb, p_upload jsonb, p_cites uuid[],
    p_headings text[], p_texts text[], p_hashes text[], p_vectors real[], p_dimension integer, p_space_model text,
    p_report_subject text, p_report_id text, p_report bytea
) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    doc kb_documents := jsonb_populate_record(NULL::kb_documents, p_document);
    stored record;
    counts integer[];
BEGIN
    IF p_space_model IS NOT NULL THEN  -- embeddings to write: only in the active space
        PERFORM pg_advisory_xact_lock_shared({SWITCH_LOCK_KEY});
        IF NOT EXISTS (
            SELECT 1 FROM embedding_space WHERE active AND model = p_space_model AND dimension = p_dimension
        ) THEN
            RAISE EXCEPTION 'the index is in another embedding space' USING ERRCODE = 'CXSPC';
        END IF;
    END IF;
    PERFORM set_config('cortex.organization_id', doc.organization_id::text, true);
    IF NOT EXISTS (SELECT 1 FROM organizations WHERE id = doc.organization_id) THEN
        RAISE EXCEPTION 'unknown organization %', doc.organization_id USING ERRCODE = 'CXORG';
    END IF;
    INSERT INTO processed_events (consumer, event_id) VALUES (p_consumer, p_event_id) ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    -- A row lock cannot cover a document with no row yet: this serializes every writer of one id.
    PERFORM pg_advisory_xact_lock(hashtextextended(doc.id::text, 0));
    SELECT organization_id, version INTO stored FROM kb_documents WHERE id = doc.id FOR UPDATE;
    IF FOUND THEN
        IF stored.organization_id <> doc.organization_id THEN
            RAISE EXCEPTION 'document id already belongs to another organization' USING ERRCODE = 'CXOWN';
        END IF;
        IF stored.version >= doc.version THEN
            RETURN false;
        END IF;
        DELETE FROM kb_document_tags WHERE document_id = doc.id;
        DELETE FROM kb_citations WHERE citing_id = doc.id;
        DELETE FROM kb_chunks WHERE document_id = doc.id;  -- their postings go by cascade
    END IF;
    IF p_upload IS NOT NULL THEN
        INSERT INTO kb_uploads (id, organization_id, work_id, filename, media_type, size_bytes, object_bucket,
                                object_name)
        SELECT u.id, u.organization_id, u.work_id, u.filename, u.media_type, u.size_bytes, u.object_bucket,
               u.object_name
        FROM jsonb_populate_record(NULL::kb_uploads, p_upload) u
        ON CONFLICT (id) DO UPDATE SET work_id = EXCLUDED.work_id, filename = EXCLUDED.filename,
            media_type = EXCLUDED.media_type, size_bytes = EXCLUDED.size_bytes,
            object_bucket = EXCLUDED.object_bucket, object_name = EXCLUDED.object_name;
    END IF;
    -- Each passage's BM25 length, from the expression of its generated `tsv` (0001).
    SELECT coalesce(array_agg(n ORDER BY i), '{{}}') INTO counts
    FROM (
        SELECT i, (
            SELECT count(*)::integer
            FROM unnest(setweight(to_tsvector('english', p_headings[i]), 'A') || to_tsvector('english', p_texts[i])) u,
                 unnest(u.weights) w
            WHERE w <> 'A' OR i = 1 OR p_headings[i] IS DISTINCT FROM p_headings[i - 1]) AS n
        FROM generate_subscripts(p_texts, 1) i
    ) passages;
    doc.token_count := coalesce((SELECT sum(n) FROM unnest(counts) n), 0);
    INSERT INTO kb_documents (id, organization_id, tenant_id, scope, work_id, title, doc_class, status, failure_reason,
                              upload_id, agent_id, agent_run_id, source, tags, body, content_hash, version, embedded,
                              updated_at, last_indexed_at, deleted_at, token_count)
    VALUES (doc.id, doc.organization_id, doc.tenant_id, doc.scope, doc.work_id, doc.title, doc.doc_class, doc.status,
            doc.failure_reason, doc.upload_id, doc.agent_id, doc.agent_run_id, doc.source, doc.tags, doc.body,
            doc.content_hash, doc.version, doc.embedded, doc.updated_at, doc.last_indexed_at, NULL, doc.token_count)
    ON CONFLICT (id) DO UPDATE SET tenant_id = EXCLUDED.tenant_id, scope = EXCLUDED.scope,
        work_id = EXCLUDED.work_id, title = EXCLUDED.title, doc_class = EXCLUDED.doc_class,
        status = EXCLUDED.status, failure_reason = EXCLUDED.failure_reason, upload_id = EXCLUDED.upload_id,
        agent_id = EXCLUDED.agent_id, agent_run_id = EXCLUDED.agent_run_id, source = EXCLUDED.source,
        tags = EXCLUDED.tags, body = EXCLUDED.body, content_hash = EXCLUDED.content_hash,
        version = EXCLUDED.version, embedded = EXCLUDED.embedded, updated_at = EXCLUDED.updated_at,
        last_indexed_at = EXCLUDED.last_indexed_at, deleted_at = NULL, token_count = EXCLUDED.token_count;
    INSERT INTO kb_document_tags (organization_id, tag, document_id)
    SELECT DISTINCT doc.organization_id, tag, doc.id FROM unnest(doc.tags) tag;
    INSERT INTO kb_citations (organization_id, citing_id, cited_id)
    SELECT DISTINCT doc.organization_id, doc.id, cited FROM unnest(p_cites) cited WHERE cited <> doc.id;
    WITH passages AS (
        INSERT INTO kb_chunks (document_id, organization_id, ordinal, heading, text, content_hash, embedding,
                               token_count)
        SELECT doc.id, doc.organization_id, i - 1, p_headings[i], p_texts[i], p_hashes[i],
               CASE WHEN p_vectors[(i - 1) * p_dimension + 1] IS NOT NULL
                    THEN CAST(p_vectors[(i - 1) * p_dimension + 1 : i * p_dimension] AS vector) END,
               counts[i]
        FROM generate_subscripts(p_texts, 1) i
        RETURNING id, ordinal, tsv
    )
    INSERT INTO kb_postings (organization_id, lexeme, chunk_id, document_id, tf, document_tokens)
    SELECT doc.organization_id, u.lexeme, p.id, doc.id, t.tf, doc.token_count
    FROM passages p, unnest(p.tsv) u,
         LATERAL (
            SELECT count(*)::integer AS tf FROM unnest(u.weights) w
            WHERE w <> 'A' OR p.ordinal = 0 OR p_headings[p.ordinal + 1] IS DISTINCT FROM p_headings[p.ordinal]
         ) t
    WHERE t.tf > 0;
    INSERT INTO outbox (subject, message_id, payload) VALUES (p_report_subject, p_report_id, p_report);
    RETURN true;
END $$
"""

PRIOR_SIGNATURE = "cortex_document_prior(text, text, uuid, uuid, bigint, boolean)"
INDEX_SIGNATURE = (
    "cortex_index_document(text, text, jsonb, jsonb, uuid[], text[], text[], text[], real[], integer, text, text, "
    "text, bytea)"
)


def upgrade() -> None:
    op.execute(PRIOR_FUNCTION)
    op.execute(INDEX_FUNCTION)
    op.execute("DROP INDEX IF EXISTS kb_chunks_tsv")


def downgrade() -> None:
    op.execute("CREATE INDEX IF NOT EXISTS kb_chunks_tsv ON kb_chunks USING gin (tsv)")
    op.execute(f"DROP FUNCTION IF EXISTS {INDEX_SIGNATURE}")
    op.execute(f"DROP FUNCTION IF EXISTS {PRIOR_SIGNATURE}")
