"""Dense search latency and recall of each vector store on its own, filtered by organization, 4 clients at once.

`python -m bench.vector_stores [--vectors 100000] [--requests 400] [--concurrency 4] [--skip qdrant-local]`

What runs: the embedded PostgreSQL (or DATABASE_URL), migrated; `--vectors` chunk rows with
embeddings written as the indexer writes them (documents of 20 chunks) for a big organization (95%)
and five small ones (1% each); the same vectors loaded into Qdrant's local mode (a fresh directory
on tmpfs when there is one), into Qdrant's engine in this process (qdrant-edge, bench/qdrant_edge.py:
the server's own segment and HNSW code, as close to a server as this machine allows) and, when
CORTEX_QDRANT_URL is set, into a fresh collection on that server (dropped afterwards). Then for each
store, `--requests` searches (k=30, like the dense leg's depth for a first page) from `--concurrency`
asyncio clients in this one process, each query a perturbed stored vector of the organization it
searches: half against the big organization, half against the small ones. Each answer is scored
against the organization's exact 30 nearest chunks (recall@30). pgvector runs through `PgVectorStore`, the
`vector_store` plugin's own search (the one the retrieval test suite runs against both stores), as
`cortex_app` under row-level security, with its default exact-scan threshold (20,000 candidate chunks).
The services' dense leg on pgvector is not this: it is SQL in the aggregator (ef_search 150, exact
below 5,000 candidates), measured within whole searches by bench/search.

The vectors are synthetic: 64 topic centres plus noise, renormalized, 384 dimensions. Such vectors
leave an HNSW walk little structure to follow: recall on them compares the stores, it does not predict
recall on real embeddings.

Local-mode Qdrant searches by brute force in Python on the event loop, so its 4 clients queue behind
each other (~2 s a search at 100k: `--skip qdrant-local` leaves it out); its figures are for what
`cortex run` would do with it, not for a Qdrant server.
"""

import argparse
import asyncio
import os
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from qdrant_client import models
from sqlalchemy import insert, text

from bench.harness import infrastructure
from bench.qdrant_edge import EdgeShardStore
from bench.report import environment, latency_summary, table, write_json
from cortex_contracts.vector_store import VectorHit, VectorStore
from cortex_indexer.ann_admission import AnnAdmission
from cortex_store.database import make_engine, make_sessionmaker
from cortex_store.migrate import upgrade_async
from cortex_store.models import EMBEDDING_DIM, KbChunk, KbDocument, Organization
from cortex_store.tenancy import org_transaction
from cortex_vector_stores import qdrant_points
from cortex_vector_stores.pgvector import PgVectorStore
from cortex_vector_stores.qdrant import QdrantVectorStore
from cortex_vector_stores.settings import PgVectorSettings, QdrantSettings

PER_DOCUMENT = 20
UPDATED_AT = datetime(2026, 1, 1, tzinfo=UTC)
SMALL_ORGS = 5
K = 30
TOPICS = 64
SHM = Path("/dev/shm")  # noqa: S108 - a private directory is made inside it

Vectors = np.ndarray[Any, np.dtype[np.float32]]


def synthetic_vectors(rng: np.random.Generator, n: int) -> Vectors:
    centres = rng.standard_normal((TOPICS, EMBEDDING_DIM)).astype(np.float32)
    vectors = centres[rng.integers(0, TOPICS, n)] + 0.6 * rng.standard_normal((n, EMBEDDING_DIM)).astype(np.float32)
    normalized: Vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return normalized


class Layout:
    """Which organization (and document) each vector belongs to, and its `kb_chunks.id` once written."""

    def __init__(self, n: int) -> None:
        self.big = uuid.uuid4()
        self.small = [uuid.uuid4() for _ in range(SMALL_ORGS)]
        small_rows = max(PER_DOCUMENT, (n // 100) // PER_DOCUMENT * PER_DOCUMENT)
        self.org_of: list[uuid.UUID] = []
        for start in range(0, n, PER_DOCUMENT):
            index = start // small_rows
            self.org_of += [self.small[index] if index < SMALL_ORGS else self.big] * PER_DOCUMENT
        self.org_of = self.org_of[:n]
        self.document_of = [uuid.uuid4() for _ in range(0, n, PER_DOCUMENT) for _ in range(PER_DOCUMENT)][:n]
        self.chunk_ids = [0] * n
        self._rows: dict[uuid.UUID, list[int]] = {}

    def rows_of(self, org: uuid.UUID) -> list[int]:
        if not self._rows:
            for i, o in enumerate(self.org_of):
                self._rows.setdefault(o, []).append(i)
        return self._rows[org]


async def load_postgres(database_url: str, layout: Layout, vectors: Vectors) -> None:
    engine = make_engine(database_url, pool_size=2)
    sessions = make_sessionmaker(engine)
    try:
        for org in [layout.big, *layout.small]:
            async with org_transaction(sessions, org) as session:
                await session.execute(insert(Organization).values(id=org, slug=f"vb-{org.hex[:12]}", name="bench"))
        for start in range(0, len(vectors), 2000):
            stop = min(start + 2000, len(vectors))
            by_org: dict[uuid.UUID, list[int]] = {}
            for i in range(start, stop):
                by_org.setdefault(layout.org_of[i], []).append(i)
            for org, rows in by_org.items():
                async with org_transaction(sessions, org) as session:
                    documents = sorted({layout.document_of[i] for i in rows})
                    await session.execute(
                        insert(KbDocument),
                        [
                            {
                                "id": doc,
                                "organization_id": org,
                                "scope": "org",
                                "title": "t",
                                "status": "published",
                                "source": "kb",
                                "tags": [],
                                "body": "b",
                                "content_hash": "h",
                                "version": 1,
                                "embedded": True,
                                "updated_at": UPDATED_AT,
                            }
                            for doc in documents
                        ],
                    )
                    result = await session.execute(
                        insert(KbChunk).returning(KbChunk.id, sort_by_parameter_order=True),
                        [
                            {
                                "document_id": layout.document_of[i],
                                "organization_id": org,
                                "ordinal": i % PER_DOCUMENT,
                                "heading": "",
                                "text": "passage",
                                "content_hash": str(i),
                                "embedding": vectors[i].tolist(),
                            }
                            for i in rows
                        ],
                    )
                    for i, cid in zip(rows, result.scalars(), strict=True):
                        layout.chunk_ids[i] = int(cid)
            print(f"  postgres: {stop:,} rows", flush=True)
        await AnnAdmission(sessions).run_pass()  # the indexer's own pass: the big organization enters the graph
        async with sessions() as session, session.begin():
            await session.execute(text("ANALYZE kb_chunks"))
            await session.execute(text("ANALYZE kb_documents"))
    finally:
        await engine.dispose()


def qdrant_point(layout: Layout, vectors: Vectors, i: int) -> tuple[str, list[float], dict[str, object]]:
    """Row `i` as the point `QdrantVectorStore.upsert` writes for it."""
    org, document, ordinal = layout.org_of[i], layout.document_of[i], i % PER_DOCUMENT
    return (
        qdrant_points.chunk_point_id(org, document, 1, ordinal),
        vectors[i].tolist(),
        qdrant_points.chunk_payload(org, None, document, 1, layout.chunk_ids[i], ordinal),
    )


async def load_qdrant(store: QdrantVectorStore, layout: Layout, vectors: Vectors) -> None:
    """The points `upsert` writes, in bulk (the protocol's per-document checks are not what is measured)."""
    client = await store._open()
    for start in range(0, len(vectors), 1000):
        stop = min(start + 1000, len(vectors))
        batch = [qdrant_point(layout, vectors, i) for i in range(start, stop)]
        await client.upsert(
            store.collection,
            points=[
                models.PointStruct(id=point_id, vector={qdrant_points.VECTOR: vector}, payload=payload)
                for point_id, vector, payload in batch
            ],
        )
        if stop % 10_000 == 0 or stop == len(vectors):
            print(f"  {store.settings.url or 'qdrant local'}: {stop:,} points", flush=True)


def load_edge(store: EdgeShardStore, layout: Layout, vectors: Vectors) -> None:
    for start in range(0, len(vectors), 1000):
        store.upsert(qdrant_point(layout, vectors, i) for i in range(start, min(start + 1000, len(vectors))))
    store.build()


def queries(rng: np.random.Generator, layout: Layout, vectors: Vectors, n: int) -> list[tuple[uuid.UUID, Vectors]]:
    """Half against the big organization, half spread over the small ones."""
    drawn: list[tuple[uuid.UUID, Vectors]] = []
    for i in range(n):
        org = layout.big if i % 2 == 0 else layout.small[(i // 2) % SMALL_ORGS]
        rows = layout.rows_of(org)
        base = vectors[rows[int(rng.integers(0, len(rows)))]]
        query = base + 0.3 * rng.standard_normal(EMBEDDING_DIM).astype(np.float32)
        drawn.append((org, query / np.linalg.norm(query)))
    return drawn


def exact_neighbours(layout: Layout, vectors: Vectors, work: Sequence[tuple[uuid.UUID, Vectors]]) -> list[set[int]]:
    """Each query's true K nearest chunks within its organization, by brute force (`kb_chunks.id`s)."""
    truth = []
    for org, query in work:
        rows = np.asarray(layout.rows_of(org))
        nearest = rows[np.argsort(-(vectors[rows] @ query), kind="stable")[:K]]
        truth.append({layout.chunk_ids[i] for i in nearest})
    return truth


class Searchable(Protocol):
    async def search(self, organization_id: uuid.UUID, vector: Sequence[float], k: int) -> list[VectorHit]: ...


async def measure(
    store: Searchable,
    work: Sequence[tuple[uuid.UUID, Vectors]],
    truth: Sequence[set[int]],
    concurrency: int,
    big: uuid.UUID,
) -> dict[str, Any]:
    """Latency, and recall@K against the exact neighbours, for the big organization and the small ones."""
    for org, query in work[:10]:  # warm-up
        await store.search(org, query.tolist(), K)
    timings: dict[str, list[float]] = {"big": [], "small": []}
    recalls: dict[str, list[float]] = {"big": [], "small": []}
    short = 0
    pending = list(reversed(range(len(work))))

    async def client() -> None:
        nonlocal short
        while pending:
            index = pending.pop()
            org, query = work[index]
            started = time.perf_counter()
            hits = await store.search(org, query.tolist(), K)
            part = "big" if org == big else "small"
            timings[part].append(time.perf_counter() - started)
            recalls[part].append(len(truth[index] & {hit.chunk_id for hit in hits}) / K)
            short += len(hits) < K

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(concurrency)))
    elapsed = time.perf_counter() - started
    every = timings["big"] + timings["small"]
    return {
        "all": latency_summary(every),
        "big_org": latency_summary(timings["big"]),
        "small_orgs": latency_summary(timings["small"]),
        "recall_big_org": float(np.mean(recalls["big"])),
        "recall_small_orgs": float(np.mean(recalls["small"])),
        "throughput_per_s": len(every) / elapsed,
        "short_results": short,
    }


async def run(args: argparse.Namespace, scratch_root: str | None) -> None:
    rng = np.random.default_rng(args.seed)
    vectors = synthetic_vectors(rng, args.vectors)
    layout = Layout(args.vectors)
    work = queries(rng, layout, vectors, args.requests)
    results: dict[str, Any] = {}
    with infrastructure() as infra, tempfile.TemporaryDirectory(dir=scratch_root) as scratch:
        await upgrade_async(infra.database_url)
        started = time.perf_counter()
        await load_postgres(infra.database_url, layout, vectors)
        print(f"postgres loaded in {time.perf_counter() - started:.0f} s", flush=True)
        truth = exact_neighbours(layout, vectors, work)
        engine = make_engine(infra.service_database_url, pool_size=args.concurrency)
        makers: dict[str, Callable[[], VectorStore | EdgeShardStore]] = {
            "pgvector": lambda: PgVectorStore(PgVectorSettings()).bind(make_sessionmaker(engine)),
            "qdrant-local": lambda: QdrantVectorStore(QdrantSettings(url=None, path=Path(scratch) / "qdrant")),
            "qdrant-edge": lambda: EdgeShardStore(Path(scratch) / "qdrant-edge", EMBEDDING_DIM),
        }
        if os.environ.get("CORTEX_QDRANT_URL"):
            collection = f"cortex_bench_{uuid.uuid4().hex[:8]}"
            makers["qdrant-server"] = lambda: QdrantVectorStore(QdrantSettings(collection=collection))
        stores = [(name, make()) for name, make in makers.items() if name not in args.skip]
        try:
            for name, store in stores:
                started = time.perf_counter()
                if isinstance(store, QdrantVectorStore):
                    await load_qdrant(store, layout, vectors)
                elif isinstance(store, EdgeShardStore):
                    await asyncio.to_thread(load_edge, store, layout, vectors)
                print(f"{name} ready in {time.perf_counter() - started:.0f} s", flush=True)
                results[name] = await measure(store, work, truth, args.concurrency, layout.big)
                print(f"{name}: {results[name]['all']}", flush=True)
        finally:
            for name, store in stores:
                if name == "qdrant-server" and isinstance(store, QdrantVectorStore):
                    client = await store._open()
                    await client.delete_collection(store.collection)
                await store.close()
            await engine.dispose()
    rows = [
        [name, part, r[part]["p50"], r[part]["p99"], r.get(f"recall_{part}", ""), r[part]["n"]]
        for name, r in results.items()
        for part in ("all", "big_org", "small_orgs")
    ]
    print(table(["store", "organizations", "p50 ms", "p99 ms", f"recall@{K}", "n"], rows))
    payload = {
        "environment": environment(),
        "vectors": args.vectors,
        "k": K,
        "concurrency": args.concurrency,
        "requests": args.requests,
        "results": results,
    }
    print(f"written: {write_json(f'vector_stores-{args.vectors}', payload)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vectors", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument(
        "--skip", type=lambda names: set(names.split(",")), default=set(), help="stores to leave out, comma-separated"
    )
    asyncio.run(run(parser.parse_args(), str(SHM) if SHM.is_dir() else None))


if __name__ == "__main__":
    main()
