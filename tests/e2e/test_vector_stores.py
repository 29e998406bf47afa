"""One retrieval suite for every vector store: pgvector (exact scan; and HNSW-first, with the exact scan
only as its fallback) and Qdrant in local mode.

Each test writes what the indexer writes — the document row and its chunk rows in PostgreSQL (as the
owner, bound to the test's own organization) — then hands the vectors to the store's `upsert`, and
checks searches against a brute-force cosine ranking computed here with numpy. pgvector searches as
the services do: as `cortex_app`, under row-level security.

The key case of issue 4: 20,000 vectors where a small organization, and one Work of the big one, each
hold 1% of the rows. A filtered search must still return k hits whenever k exist. On pgvector the
small organization stays outside the HNSW graph (migration 0014) and is scanned exactly; a walk of the
big one filtered to the Work comes back short (pgvector 0.6 filters after the walk), so the HNSW-first
variant must be seen falling back to the exact scan.
"""

import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from qdrant_client import models
from sqlalchemy import delete, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cortex_contracts.vector_store import VectorChunk, VectorHit, VectorStore
from cortex_indexer.ann_admission import AnnAdmission
from cortex_store.database import make_engine, make_sessionmaker
from cortex_store.models import EMBEDDING_DIM, KbChunk, KbDocument, Organization
from cortex_store.tenancy import org_transaction
from cortex_vector_stores import qdrant_points
from cortex_vector_stores.binding import bind_database, vectors_live_in_database
from cortex_vector_stores.pgvector import PgVectorStore
from cortex_vector_stores.qdrant import QdrantVectorStore
from cortex_vector_stores.settings import PgVectorSettings, QdrantSettings
from tests.infrastructure import Infrastructure

pytestmark = pytest.mark.e2e

Sessions = async_sessionmaker[AsyncSession]
STORES = ["pgvector", "pgvector-hnsw", "qdrant"]
SHM = Path("/dev/shm")  # noqa: S108 - private directories are made inside it


def unit_vectors(rng: np.random.Generator, n: int) -> np.ndarray[Any, np.dtype[np.float32]]:
    vectors = rng.standard_normal((n, EMBEDDING_DIM)).astype(np.float32)
    normalized: np.ndarray[Any, np.dtype[np.float32]] = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return normalized


@pytest.fixture(scope="module")
async def owner(migrated: Infrastructure) -> AsyncIterator[Sessions]:
    engine = make_engine(migrated.database_url, pool_size=2)
    yield make_sessionmaker(engine)
    await engine.dispose()


@pytest.fixture(scope="module")
async def app_sessions(migrated: Infrastructure) -> AsyncIterator[Sessions]:
    engine = make_engine(migrated.app_database_url, pool_size=4)
    yield make_sessionmaker(engine)
    await engine.dispose()


@pytest.fixture
def scratch() -> Iterator[Path]:
    """Local-mode Qdrant commits each point to SQLite on its own: on tmpfs that costs no fsync."""
    with tempfile.TemporaryDirectory(prefix="cx-qdrant-", dir=SHM if SHM.is_dir() else None) as path:
        yield Path(path)


def make_store(kind: str, app_sessions: Sessions, scratch: Path) -> VectorStore:
    """pgvector as configured by default; pgvector walking the HNSW graph first whatever the candidate
    count (the exact scan only as its fallback); Qdrant in local mode."""
    if kind == "qdrant":
        return QdrantVectorStore(QdrantSettings(url=None, path=scratch / "qdrant", dimension=EMBEDDING_DIM))
    if kind == "pgvector-hnsw":
        return bind_database(PgVectorStore(PgVectorSettings(exact_scan_max_chunks=0)), app_sessions)
    return bind_database(PgVectorStore(PgVectorSettings()), app_sessions)


@pytest.fixture(params=STORES)
async def store(request: pytest.FixtureRequest, app_sessions: Sessions, scratch: Path) -> AsyncIterator[VectorStore]:
    opened = make_store(request.param, app_sessions, scratch)
    assert await opened.health() is None
    yield opened
    await opened.close()


@dataclass
class Corpus:
    """Writes as the indexer does, and remembers every chunk's vector for the brute-force ranking."""

    owner: Sessions
    store: VectorStore
    vectors: dict[int, np.ndarray[Any, np.dtype[np.float32]]] = field(default_factory=dict)
    owners: dict[int, tuple[uuid.UUID, uuid.UUID | None, uuid.UUID]] = field(default_factory=dict)

    async def organization(self) -> uuid.UUID:
        """In the HNSW graph from the start when the store walks it first (else it would scan exactly)."""
        walks = isinstance(self.store, PgVectorStore) and self.store.settings.exact_scan_max_chunks == 0
        return await new_organization(self.owner, in_graph=walks)

    async def index(
        self,
        org: uuid.UUID,
        document_id: uuid.UUID,
        vectors: np.ndarray[Any, np.dtype[np.float32]],
        *,
        version: int = 1,
        work_id: uuid.UUID | None = None,
    ) -> list[int]:
        """The document's rows, replaced as `cortex_index_document` replaces them, then the store's upsert."""
        chunk_ids = await write_rows(self.owner, org, document_id, version, work_id, vectors, with_embeddings=False)
        chunks = [VectorChunk(cid, i, vectors[i].tolist()) for i, cid in enumerate(chunk_ids)]
        assert await self.store.upsert(org, work_id, document_id, version, chunks)
        for cid in [cid for cid, (_, _, doc) in self.owners.items() if doc == document_id]:
            del self.vectors[cid], self.owners[cid]
        for i, cid in enumerate(chunk_ids):
            self.vectors[cid] = vectors[i]
            self.owners[cid] = (org, work_id, document_id)
        return chunk_ids

    def exact(
        self,
        org: uuid.UUID,
        query: np.ndarray[Any, np.dtype[np.float32]],
        k: int,
        works: frozenset[uuid.UUID] | None = None,
    ) -> list[int]:
        candidates = [cid for cid, (o, work, _) in self.owners.items() if o == org and (works is None or work in works)]
        scores = {cid: float(self.vectors[cid] @ query) for cid in candidates}
        return sorted(candidates, key=lambda cid: -scores[cid])[:k]


async def new_organization(owner: Sessions, *, in_graph: bool = False) -> uuid.UUID:
    org = uuid.uuid4()
    async with org_transaction(owner, org) as session:
        await session.execute(
            insert(Organization).values(id=org, slug=f"vs-{org.hex[:12]}", name="vs", ann_indexed=in_graph)
        )
    return org


def document_row(org: uuid.UUID, document_id: uuid.UUID, version: int, work_id: uuid.UUID | None) -> dict[str, Any]:
    return {
        "id": document_id,
        "organization_id": org,
        "scope": "work" if work_id else "org",
        "work_id": work_id,
        "title": f"doc {document_id}",
        "status": "published",
        "source": "kb",
        "tags": [],
        "body": "body",
        "content_hash": "h",
        "version": version,
        "updated_at": datetime.now(UTC),
    }


def chunk_rows(
    org: uuid.UUID,
    document_id: uuid.UUID,
    version: int,
    vectors: np.ndarray[Any, np.dtype[np.float32]],
    *,
    with_embeddings: bool,
    in_graph: bool = False,
) -> list[dict[str, Any]]:
    return [
        {
            "document_id": document_id,
            "organization_id": org,
            "ordinal": i,
            "heading": "",
            "text": f"passage {i}",
            "content_hash": f"{document_id}-{version}-{i}",
            "embedding": vectors[i].tolist() if with_embeddings else None,
            "in_ann": in_graph,
        }
        for i in range(len(vectors))
    ]


async def insert_chunks(session: AsyncSession, rows: list[dict[str, Any]]) -> list[int]:
    result = await session.execute(insert(KbChunk).returning(KbChunk.id, sort_by_parameter_order=True), rows)
    return [int(cid) for cid in result.scalars()]


async def write_rows(
    owner: Sessions,
    org: uuid.UUID,
    document_id: uuid.UUID,
    version: int,
    work_id: uuid.UUID | None,
    vectors: np.ndarray[Any, np.dtype[np.float32]],
    *,
    with_embeddings: bool,
) -> list[int]:
    """One document's row and its chunk rows, replaced as the indexer replaces them."""
    document = document_row(org, document_id, version, work_id)
    async with org_transaction(owner, org) as session:
        if await session.scalar(select(KbDocument.id).where(KbDocument.id == document_id)) is None:
            await session.execute(insert(KbDocument).values(**document))
        else:
            await session.execute(update(KbDocument).where(KbDocument.id == document_id).values(**document))
        await session.execute(delete(KbChunk).where(KbChunk.document_id == document_id))
        in_graph = bool(await session.scalar(select(Organization.ann_indexed).where(Organization.id == org)))
        rows = chunk_rows(org, document_id, version, vectors, with_embeddings=with_embeddings, in_graph=in_graph)
        return await insert_chunks(session, rows)


@pytest.fixture
def corpus(owner: Sessions, store: VectorStore) -> Corpus:
    return Corpus(owner, store)


def chunk_ids(hits: list[VectorHit]) -> list[int]:
    return [hit.chunk_id for hit in hits]


async def test_nearest_chunks_are_the_exact_nearest(corpus: Corpus) -> None:
    rng = np.random.default_rng(1)
    org = await corpus.organization()
    for _ in range(4):
        await corpus.index(org, uuid.uuid4(), unit_vectors(rng, 5))
    walks_graph = isinstance(corpus.store, PgVectorStore) and corpus.store.settings.exact_scan_max_chunks == 0
    for query in unit_vectors(rng, 5):
        hits = await corpus.store.search(org, query.tolist(), 6)
        if walks_graph:  # HNSW is approximate (exactness there is the 1% test's fallback): k of the org's own
            assert len(hits) == 6
            assert set(chunk_ids(hits)) <= set(corpus.exact(org, query, 20))
            assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)
        else:
            assert chunk_ids(hits) == corpus.exact(org, query, 6)
        for hit in hits:
            assert hit.score == pytest.approx(float(corpus.vectors[hit.chunk_id] @ query), abs=1e-4)
            assert corpus.owners[hit.chunk_id][2] == hit.document_id
    everything = await corpus.store.search(org, unit_vectors(rng, 1)[0].tolist(), 100)
    assert len(everything) == 20  # k larger than what exists: all of it, once


async def test_another_organizations_vectors_never_come_back(corpus: Corpus) -> None:
    rng = np.random.default_rng(2)
    org_a, org_b = await corpus.organization(), await corpus.organization()
    query = unit_vectors(rng, 1)[0]
    await corpus.index(org_a, uuid.uuid4(), unit_vectors(rng, 6))
    theirs = await corpus.index(org_b, uuid.uuid4(), np.stack([query] * 4))  # B holds the query itself
    hits = await corpus.store.search(org_a, query.tolist(), 10)
    assert chunk_ids(hits) == corpus.exact(org_a, query, 10)
    assert not set(chunk_ids(hits)) & set(theirs)
    assert {hit.chunk_id for hit in await corpus.store.search(org_b, query.tolist(), 4)} == set(theirs)
    assert await corpus.store.search(uuid.uuid4(), query.tolist(), 10) == []  # an unknown organization


async def test_a_work_set_keeps_to_those_works_and_documents(corpus: Corpus) -> None:
    rng = np.random.default_rng(3)
    org = await corpus.organization()
    works = [uuid.uuid4() for _ in range(3)]
    documents: dict[uuid.UUID, uuid.UUID | None] = {}
    for work in [*works, *works, None, None]:
        document_id = uuid.uuid4()
        documents[document_id] = work
        await corpus.index(org, document_id, unit_vectors(rng, 3), work_id=work)
    chosen = frozenset(works[:2])
    for query in unit_vectors(rng, 3):
        hits = await corpus.store.search(org, query.tolist(), 5, work_ids=chosen)
        assert chunk_ids(hits) == corpus.exact(org, query, 5, chosen)
        assert {documents[hit.document_id] for hit in hits} <= chosen
    org_wide = frozenset(doc for doc, work in documents.items() if work is None)
    in_docs = await corpus.store.search(org, query.tolist(), 50, document_ids=org_wide)
    assert {hit.document_id for hit in in_docs} == org_wide and len(in_docs) == 6
    both = await corpus.store.search(org, query.tolist(), 50, work_ids=chosen, document_ids=org_wide)
    assert both == []  # org-wide documents belong to no Work
    assert await corpus.store.search(org, query.tolist(), 5, work_ids=frozenset()) == []


async def test_a_deleted_document_is_gone_and_an_older_deletion_changes_nothing(corpus: Corpus) -> None:
    rng = np.random.default_rng(4)
    org = await corpus.organization()
    kept, dropped, tied = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    await corpus.index(org, kept, unit_vectors(rng, 3), version=5)
    await corpus.index(org, dropped, unit_vectors(rng, 3), version=5)
    await corpus.index(org, tied, unit_vectors(rng, 3), version=5)
    query = unit_vectors(rng, 1)[0].tolist()
    assert not await corpus.store.delete_document(org, kept, version=4)  # older than what is stored
    assert await corpus.store.delete_document(org, dropped, version=6)
    assert await corpus.store.delete_document(org, tied, version=5)  # a deletion wins a tie
    assert {hit.document_id for hit in await corpus.store.search(org, query, 10)} == {kept}
    assert await corpus.store.delete_document(uuid.uuid4(), kept, version=9)  # another org's: touches nothing
    assert {hit.document_id for hit in await corpus.store.search(org, query, 10)} == {kept}


async def test_reindexing_replaces_a_documents_vectors_and_an_older_upsert_loses(corpus: Corpus) -> None:
    rng = np.random.default_rng(5)
    org = await corpus.organization()
    document_id = uuid.uuid4()
    first = unit_vectors(rng, 4)
    old_ids = await corpus.index(org, document_id, first, version=1)
    new_ids = await corpus.index(org, document_id, unit_vectors(rng, 2), version=2)
    for query in first:  # the old passages' own vectors now find only the new passages
        assert set(chunk_ids(await corpus.store.search(org, query.tolist(), 10))) == set(new_ids)
    late = [VectorChunk(cid, i, first[i].tolist()) for i, cid in enumerate(old_ids)]
    assert not await corpus.store.upsert(org, None, document_id, 1, late)  # a late, older version
    assert set(chunk_ids(await corpus.store.search(org, first[0].tolist(), 10))) == set(new_ids)


# --- the key case: 1% of 20,000 rows -------------------------------------------------------------


@dataclass(frozen=True)
class World:
    big: uuid.UUID
    small: uuid.UUID
    work: uuid.UUID  # one Work of the big organization
    vectors: np.ndarray[Any, np.dtype[np.float32]]
    chunk_ids: list[int]
    org_of: list[uuid.UUID]
    work_of: list[uuid.UUID | None]
    document_of: list[uuid.UUID]

    def exact(self, query: np.ndarray[Any, np.dtype[np.float32]], k: int, org: uuid.UUID, work: bool) -> list[int]:
        mask = np.array(
            [o == org and (not work or w == self.work) for o, w in zip(self.org_of, self.work_of, strict=True)]
        )
        index = np.flatnonzero(mask)
        order = index[np.argsort(-(self.vectors[index] @ query), kind="stable")]
        return [self.chunk_ids[i] for i in order[:k]]


TOTAL = 20_000
PER_DOCUMENT = 20
ONE_PERCENT = TOTAL // 100
BATCH = ONE_PERCENT


@pytest.fixture(scope="module")
async def world(owner: Sessions, app_sessions: Sessions) -> World:
    """20,000 embedded chunks in PostgreSQL, as the indexer writes them: a big organization with
    19,800 (200 of them in one Work) and a small one with 200; then the indexer's admission pass, with
    the 1% as its bound, puts the big one in the HNSW graph."""
    rng = np.random.default_rng(20_000)
    vectors = unit_vectors(rng, TOTAL)
    big, small, work = await new_organization(owner), await new_organization(owner), uuid.uuid4()
    org_of: list[uuid.UUID] = []
    work_of: list[uuid.UUID | None] = []
    document_of: list[uuid.UUID] = []
    for start in range(0, TOTAL, PER_DOCUMENT):
        org_of += [small if start < ONE_PERCENT else big] * PER_DOCUMENT
        work_of += [work if ONE_PERCENT <= start < 2 * ONE_PERCENT else None] * PER_DOCUMENT
        document_of += [uuid.uuid4()] * PER_DOCUMENT
    chunk_ids: list[int] = []
    for start in range(0, TOTAL, BATCH):  # a batch never mixes organizations (ONE_PERCENT divides BATCH)
        org = org_of[start]
        rows = range(start, min(start + BATCH, TOTAL), PER_DOCUMENT)
        async with org_transaction(owner, org) as session:
            await session.execute(insert(KbDocument), [document_row(org, document_of[i], 1, work_of[i]) for i in rows])
            chunks = [
                row
                for i in rows
                for row in chunk_rows(org, document_of[i], 1, vectors[i : i + PER_DOCUMENT], with_embeddings=True)
            ]
            chunk_ids += await insert_chunks(session, chunks)
    admitted = await AnnAdmission(app_sessions, min_chunks=ONE_PERCENT).run_pass()  # (and any other test's org as big)
    assert big in admitted and small not in admitted
    return World(big, small, work, vectors, chunk_ids, org_of, work_of, document_of)


async def load_into_qdrant(store: QdrantVectorStore, world: World) -> None:
    """The same points `upsert` writes, sent in bulk (one protocol upsert per document would count the
    whole local-mode collection several times each)."""
    client = await store._open()
    for start in range(0, TOTAL, 1000):
        await client.upsert(
            store.collection,
            points=[
                models.PointStruct(
                    id=qdrant_points.chunk_point_id(world.org_of[i], world.document_of[i], 1, i % PER_DOCUMENT),
                    vector={qdrant_points.VECTOR: world.vectors[i].tolist()},
                    payload=qdrant_points.chunk_payload(
                        world.org_of[i], world.work_of[i], world.document_of[i], 1, world.chunk_ids[i], i % PER_DOCUMENT
                    ),
                )
                for i in range(start, min(start + 1000, TOTAL))
            ],
        )


@pytest.mark.timeout(900)
@pytest.mark.parametrize("kind", STORES)
async def test_one_percent_of_twenty_thousand_rows_still_gets_k_hits(
    kind: str, world: World, app_sessions: Sessions, scratch: Path
) -> None:
    store = make_store(kind, app_sessions, scratch)
    if isinstance(store, QdrantVectorStore):
        await load_into_qdrant(store, world)
    else:
        assert vectors_live_in_database(store)
    try:
        rng = np.random.default_rng(7)
        for query in unit_vectors(rng, 2):
            small = await store.search(world.small, query.tolist(), 10)
            assert chunk_ids(small) == world.exact(query, 10, world.small, work=False)
            in_work = await store.search(world.big, query.tolist(), 10, work_ids=frozenset({world.work}))
            assert chunk_ids(in_work) == world.exact(query, 10, world.big, work=True)
        everything = await store.search(world.small, query.tolist(), ONE_PERCENT + 50)
        assert len(everything) == ONE_PERCENT  # more asked than exist: all that exist
        if isinstance(store, PgVectorStore) and kind == "pgvector-hnsw":
            # The fault the fallback exists for did happen: the big organization's walks filtered to one
            # Work came back short. (The small one, outside the graph, never walks.)
            assert store.exact_fallbacks >= 2
    finally:
        await store.close()
