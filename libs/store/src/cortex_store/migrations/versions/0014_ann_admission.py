"""HNSW only for the organizations that walk it.

The dense leg scans an organization's vectors exactly up to `exact_scan_max_chunks` (5,000) and walks
the HNSW graph only above, yet every passage of every organization was inserted into the graph: about
half of PostgreSQL's CPU while indexing (bench/ingest), spent on organizations that never walk it, and
a shared graph whose walks for a big organization wade through everyone else's vectors. As Qdrant's
`indexing_threshold` does, the graph now holds only organizations admitted to it:

- `organizations.ann_indexed` and `kb_chunks.in_ann`; `kb_chunks_embedding_hnsw` is partial,
  `WHERE in_ann`, and a walk says `AND c.in_ann` so the planner may use it.
- `cortex_enter_ann(organization, min_chunks)` admits an organization with more than `min_chunks`
  embedded passages: it marks all its passages and the organization in one transaction, and is true
  when the organization is (now or already) admitted. The indexer calls it periodically.
- `cortex_index_document` writes a passage's `in_ann` from its organization's flag, read under a shared
  advisory lock that `cortex_enter_ann` takes exclusively: a document written while its organization
  is admitted is never left out of the graph.
- `cortex_switch_embedding_space` rebuilds the index partial.

Organizations already over the bound (5,000, the services' default) are admitted here, with the old
index dropped first so their passages are not inserted into it again.

Revision 0021 edited the functions' texts here: see there.

Revision ID: 0014
Revises: 0013
"""

from alembic import op

from cortex_store.earlier_revisions import function

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

SWITCH_LOCK_KEY = 0x63786573  # cortex_switch_embedding_space's lock (0010), taken shared by writers
ANN_LOCK_CLASS = 0x63786161  # "cxaa": with the organization's hash, the two-key advisory lock of admission
HNSW_MAX_DIMENSION = 2000
ADMIT_OVER = 5000  # the services' default `exact_scan_max_chunks`

ENTER_FUNCTION = f"""
CREATE FUNCTION cortex_enter_ann(p_organization uuid, p_min_chunks integer) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    admitted boolean;
BEGIN
    PERFORM set_config('cortex.organization_id', p_organization::text, true);
    SELECT ann_indexed INTO admitted FROM organizations WHERE id = p_organization;
    IF NOT FOUND OR admitted THEN
        RETURN coalesce(admitted, false);
    END IF;
    IF (SELECT count(*) FROM (
            SELECT 1 FROM kb_chunks WHERE organization_id = p_organization AND embedding IS NOT NULL
            LIMIT p_min_chunks + 1) capped) <= p_min_chunks THEN
        RETURN false;
    END IF;
    -- Waits for every writer that read the flag before: their passages are then committed and marked here.
    PERFORM pg_advisory_xact_lock({ANN_LOCK_CLASS}, hashtext(p_organization::text));
    UPDATE kb_chunks SET in_ann = true WHERE organization_id = p_organization AND NOT in_ann;
    UPDATE organizations SET ann_indexed = true WHERE id = p_organization;
    RETURN true;
END $$
"""

SWITCH_FUNCTION = f"""
CREATE OR REPLACE FUNCTION cortex_switch_embedding_space(p_model text, p_dimension integer) RETURNS boolean
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
            CREATE INDEX kb_chunks_embedding_hnsw ON kb_chunks USING hnsw (embedding vector_cosine_ops)
                WHERE in_ann;
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

INDEX_FUNCTION = f"""
CREATE OR REPLACE FUNCTION cortex_index_document(
    p_consumer text, p_event_id text, p_document jsonb, p_upload jsonb, p_cites uuid[],
    p_headings text[], p_texts text[], p_hashes text[], p_vectors real[], p_dimension integer, p_space_model text,
    p_report_subject text, p_report_id text, p_report bytea
) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    doc kb_documents := jsonb_populate_record(NULL::kb_documents, p_document);
    stored record;
    counts integer[];
    admitted boolean;
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
    -- Held until commit: cortex_enter_ann cannot admit the organization between this read and then.
    PERFORM pg_advisory_xact_lock_shared({ANN_LOCK_CLASS}, hashtext(doc.organization_id::text));
    SELECT ann_indexed INTO admitted FROM organizations WHERE id = doc.organization_id;
    IF NOT FOUND THEN
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
                               token_count, in_ann)
        SELECT doc.id, doc.organization_id, i - 1, p_headings[i], p_texts[i], p_hashes[i],
               CASE WHEN p_vectors[(i - 1) * p_dimension + 1] IS NOT NULL
                    THEN CAST(p_vectors[(i - 1) * p_dimension + 1 : i * p_dimension] AS vector) END,
               counts[i], admitted
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

ENTER_SIGNATURE = "cortex_enter_ann(uuid, integer)"

REPLACE_INDEX = f"""
DO $$
DECLARE
    org uuid;
    indexed boolean := EXISTS (SELECT FROM pg_indexes WHERE indexname = 'kb_chunks_embedding_hnsw');
BEGIN
    DROP INDEX IF EXISTS kb_chunks_embedding_hnsw;
    FOR org IN SELECT id FROM organizations LOOP
        PERFORM cortex_enter_ann(org, {ADMIT_OVER});
    END LOOP;
    IF indexed THEN
        CREATE INDEX kb_chunks_embedding_hnsw ON kb_chunks USING hnsw (embedding vector_cosine_ops) WHERE in_ann;
    END IF;
END $$
"""


def upgrade() -> None:
    op.execute("ALTER TABLE organizations ADD COLUMN ann_indexed boolean NOT NULL DEFAULT false")
    op.execute("ALTER TABLE kb_chunks ADD COLUMN in_ann boolean NOT NULL DEFAULT false")
    op.execute(ENTER_FUNCTION)
    op.execute(INDEX_FUNCTION)
    op.execute(SWITCH_FUNCTION)
    op.execute(REPLACE_INDEX)


def downgrade() -> None:
    op.execute(function("0013_index_document_function.py", "INDEX_FUNCTION"))
    op.execute(function("0010_embedding_space.py", "SWITCH_FUNCTION"))
    op.execute(f"DROP FUNCTION IF EXISTS {ENTER_SIGNATURE}")
    op.execute("""
        DO $$ BEGIN
            IF EXISTS (SELECT FROM pg_indexes WHERE indexname = 'kb_chunks_embedding_hnsw') THEN
                DROP INDEX kb_chunks_embedding_hnsw;
                CREATE INDEX kb_chunks_embedding_hnsw ON kb_chunks USING hnsw (embedding vector_cosine_ops);
            END IF;
        END $$""")
    op.execute("ALTER TABLE kb_chunks DROP COLUMN in_ann")
    op.execute("ALTER TABLE organizations DROP COLUMN ann_indexed")
