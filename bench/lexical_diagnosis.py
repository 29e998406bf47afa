"""Why the lexical leg ranks CISI differently from bm25s: the same documents scored several ways, offline.

`python -m bench.lexical_diagnosis [--data-dir DIR] [--reindex]`

CISI is indexed straight through the indexer's own `index_document` (no NATS, no embedder) into one
organization of a PostgreSQL server (DATABASE_URL, else an embedded one kept in `--data-dir`, so a
second run reuses the index unless `--reindex`). Then, for the 76 judged queries, nDCG@10 of:

- `cortex lexical`: the aggregator's own statement (`cortex_aggregator.retrieval.lexical_hits`);
- `bm25s`: the reference of bench/quality.py (English stop words, no stemming, k1 1.5, b 0.75);
- `python BM25 over PostgreSQL lexemes`: the same BM25 formula in Python, on `to_tsvector('english',
  title || body)` of each whole document, i.e. PostgreSQL's analysis with none of the chunking — the
  ceiling for BM25 from PostgreSQL's analysis;
- `python BM25 over kb_postings`: the formula in Python over the rows the indexer wrote, to tell a
  statement bug from a postings bug.

With `--hybrid`, the lexical leg's top 100 are also fused with the dense reference's top 100
(all-MiniLM-L6-v2 on title + body, as bench/quality.py) by weighted reciprocal rank, for a few values of
the fusion constant and of the lexical leg's weight: what FeedConfig's rrf_k and weights would give.
"""

import argparse
import asyncio
import math
import os
import sys
import tempfile
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker, create_async_engine

from bench.datasets import Cisi, load_cisi
from bench.metrics import mean, ndcg_at
from bench.references import BM25Reference, DenseReference
from cortex_aggregator import retrieval
from cortex_aggregator.corpus_stats import CorpusStats
from cortex_aggregator.filters import document_filter
from cortex_aggregator.fusion import reciprocal_rank_fusion
from cortex_contracts.documents import DocumentUpserted
from cortex_contracts.rpc import FeedFilters
from cortex_embedded_servers import EmbeddedPostgres
from cortex_embedding.local_model import load_local_embedder
from cortex_indexer.indexing import EventMeta, IndexingContext, index_document
from cortex_store.database import driver_connection
from cortex_store.migrate import upgrade_async
from cortex_store.org_reads import OrgReads
from cortex_store.tenancy import bind_organization

K = 10
SLUG = "lexical-diagnosis-cisi"
K1, B = retrieval.BM25_K1, retrieval.BM25_B


def bm25_rank(docs: dict[str, Counter[str]], lengths: dict[str, float], query: Sequence[str], k: int) -> list[str]:
    """Lucene/bm25s BM25: idf = ln(1 + (N - df + .5) / (df + .5)); every query token counts once per occurrence."""
    n = len(docs)
    avgdl = sum(lengths.values()) / n
    df = Counter(term for counts in docs.values() for term in counts)
    scores: dict[str, float] = {}
    for term in query:
        if term not in df:
            continue
        idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
        for doc, counts in docs.items():
            tf = counts.get(term, 0)
            if tf:
                norm = tf + K1 * (1 - B + B * lengths[doc] / avgdl)
                scores[doc] = scores.get(doc, 0.0) + idf * tf * (K1 + 1) / norm
    return sorted(scores, key=lambda doc: (-scores[doc], doc))[:k]


async def index_cisi(sessions: async_sessionmaker[AsyncSession], data: Cisi) -> uuid.UUID:
    org = uuid.uuid4()
    async with sessions() as session, session.begin():
        # An earlier index stays, renamed (its rows reference the organization).
        await session.execute(text("UPDATE organizations SET slug = slug || '-' || id WHERE slug = :s"), {"s": SLUG})
        await session.execute(
            text("INSERT INTO organizations (id, slug, name) VALUES (:id, :s, :s)"), {"id": org, "s": SLUG}
        )
    ctx = IndexingContext(sessions=sessions, embed=None, consumer="lexical-diagnosis")
    now = datetime.now(UTC)
    for doc in data.docs:
        payload = DocumentUpserted.model_validate(
            {
                "documentId": str(uuid.uuid5(org, doc.id)),  # ids of its own: an earlier index keeps its ids
                "organizationId": str(org),
                "title": doc.title,
                "body": doc.body,
                "version": 1,
            }
        )
        meta = EventMeta(inbox_key=str(uuid.uuid4()), organization_id=org, tenant_id=None, time=now)
        await index_document(ctx, meta, payload, doc.body)
    async with sessions() as session, session.begin():
        for table in ("kb_postings", "kb_documents", "kb_chunks"):
            await session.execute(text(f"ANALYZE {table}"))
    return org


async def existing_org(sessions: async_sessionmaker[AsyncSession]) -> uuid.UUID | None:
    async with sessions() as session:
        found = await session.scalar(text("SELECT id FROM organizations WHERE slug = :s"), {"s": SLUG})
    return uuid.UUID(str(found)) if found else None


async def lexemes(session: AsyncSession, texts: Sequence[str]) -> list[Counter[str]]:
    rows = await session.execute(
        text(
            "SELECT i, u.lexeme, coalesce(array_length(u.positions, 1), 1) AS tf "
            "FROM unnest(CAST(:texts AS text[])) WITH ORDINALITY t(body, i), unnest(to_tsvector('english', body)) u"
        ),
        {"texts": list(texts)},
    )
    counts: list[Counter[str]] = [Counter() for _ in texts]
    for row in rows:
        counts[row.i - 1][row.lexeme] = row.tf
    return counts


DEPTH = 100
FUSIONS = ((60, 1.0), (60, 0.8), (60, 1.2), (60, 1.5), (20, 1.0), (100, 1.0))


def hybrid_runs(data: Cisi, lexical: dict[str, list[str]]) -> dict[str, Callable[[str, str], list[str]]]:
    model = load_local_embedder()
    if model is None:
        raise SystemExit("--hybrid needs the local embedding model")
    dense = DenseReference(model, [d.id for d in data.docs], [f"{d.title}\n{d.body}" for d in data.docs])
    nearest = {qid: dense.rank(q, DEPTH) for qid, q in data.queries.items()}

    def fuse(k: int, weight: float) -> Callable[[str, str], list[str]]:
        return lambda qid, q: [
            doc for doc, _ in reciprocal_rank_fusion([(lexical[qid], weight), (nearest[qid], 1.0)], k=k)[:K]
        ]

    runs = {f"RRF k={k}, lexical weight {w}: cortex lexical + dense reference": fuse(k, w) for k, w in FUSIONS}
    runs["dense reference alone"] = lambda qid, q: nearest[qid][:K]
    return runs


async def diagnose(database_url: str, reindex: bool, hybrid: bool = False) -> dict[str, float]:
    engine = create_async_engine(database_url)
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    data = load_cisi()
    try:
        org = None if reindex else await existing_org(sessions)
        if org is None:
            print(f"indexing {len(data.docs)} CISI documents through the indexer…", flush=True)
            org = await index_cisi(sessions, data)
        back = {str(uuid.uuid5(org, doc.id)): doc.id for doc in data.docs}
        runs: dict[str, Callable[[str, str], list[str]]] = {}
        async with sessions() as session, session.begin():
            await bind_organization(session, org)
            where = document_filter(FeedFilters())
            reads = OrgReads(await driver_connection(session), walk_ef=None)  # the search path's view of it
            corpus = await CorpusStats().of(reads, org)
            cortex = {
                qid: [
                    back[str(h.document_id)] for h in await retrieval.lexical_hits(reads, org, q, where, DEPTH, corpus)
                ]
                for qid, q in data.queries.items()
            }
            whole = await lexemes(session, [f"{d.title}\n{d.body}" for d in data.docs])
            query_terms = await lexemes(session, list(data.queries.values()))
            posted: dict[str, Counter[str]] = {}
            posted_len: dict[str, float] = {}
            rows = await session.execute(
                text("SELECT document_id, lexeme, tf, document_tokens FROM kb_postings WHERE organization_id = :o"),
                {"o": org},
            )
            for row in rows:
                doc = back[str(row.document_id)]
                posted.setdefault(doc, Counter())[row.lexeme] += row.tf
                posted_len[doc] = row.document_tokens
        runs["cortex lexical (SQL)"] = lambda qid, q: cortex[qid][:K]
        reference = BM25Reference([d.id for d in data.docs], [f"{d.title}\n{d.body}" for d in data.docs])
        runs["bm25s reference"] = lambda qid, q: reference.rank(q, K)
        docs = {d.id: counts for d, counts in zip(data.docs, whole, strict=True)}
        lengths = {doc: float(sum(c.values())) for doc, c in docs.items()}
        terms = dict(zip(data.queries, query_terms, strict=True))
        runs["python BM25, PostgreSQL lexemes of whole documents, query tf"] = lambda qid, q: bm25_rank(
            docs, lengths, list(terms[qid].elements()), K
        )
        runs["python BM25, PostgreSQL lexemes of whole documents, distinct query terms"] = lambda qid, q: bm25_rank(
            docs, lengths, list(terms[qid]), K
        )
        runs["python BM25 over kb_postings, distinct query terms"] = lambda qid, q: bm25_rank(
            posted, posted_len, list(terms[qid]), K
        )
        if hybrid:
            runs |= hybrid_runs(data, cortex)
        chunked_tokens = sum(posted_len.values()) / len(posted_len)
        print(f"mean document length: whole text {mean(list(lengths.values())):.1f}, postings {chunked_tokens:.1f}")
        results = {}
        for name, rank in runs.items():
            results[name] = round(
                mean([ndcg_at(rank(qid, q), data.relevant[qid], K) for qid, q in data.queries.items()]), 4
            )
            print(f"{results[name]:.4f}  {name}", flush=True)
        return results
    finally:
        await engine.dispose()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, help="embedded PostgreSQL data directory, kept between runs")
    parser.add_argument("--reindex", action="store_true", help="index CISI again even if it is there")
    parser.add_argument("--hybrid", action="store_true", help="also fuse with the dense reference")
    args = parser.parse_args(argv)
    url = os.environ.get("DATABASE_URL")
    with tempfile.TemporaryDirectory(prefix="cxl-", dir="/tmp") as scratch:
        postgres = None if url else EmbeddedPostgres(args.data_dir or Path(scratch) / "pg")
        try:
            url = url or postgres.start() if postgres else url
            assert url is not None
            asyncio.run(upgrade_async(url))
            asyncio.run(diagnose(url, args.reindex, args.hybrid))
        finally:
            if postgres is not None:
                postgres.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
