"""Per document the highest version wins in Qdrant, whatever the order, duplication or interleaving of
the writes — with no lock between writers (the indexer's PostgreSQL claim is a second guard).

Each version of a document is an upsert of 0–3 chunks, a deletion, or both (upstream deleting a document
at the version it has: a deletion wins the tie). Hypothesis draws the versions, then a sequence that holds
each operation at least once plus duplicates, in any order. The sequence is applied one after the other,
and again all at once (`asyncio.gather`: every `await` inside the store's multi-step writes is a point
where another writer's steps run in between). Either way the document must end up with exactly the
chunks of its highest version — none if that version is deleted or has no passages.
"""

import asyncio
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from qdrant_client import models

from cortex_contracts.vector_store import VectorChunk
from cortex_vector_stores import qdrant_points as points
from cortex_vector_stores.qdrant import QdrantVectorStore
from cortex_vector_stores.settings import QdrantSettings

ORG = uuid.UUID("00000000-0000-4000-8000-00000000000a")
WORK = uuid.UUID("00000000-0000-4000-8000-0000000000b0")
DIM = 8


@dataclass(frozen=True)
class Op:
    version: int
    chunks: int | None  # None: a deletion

    def chunk_ids(self) -> set[int]:
        return {self.version * 100 + ordinal for ordinal in range(self.chunks or 0)}


def vector(version: int, ordinal: int) -> list[float]:
    return [1.0, float(version), float(ordinal), 0.5, 0.25, 0.0, 0.0, 1.0]


async def apply(store: QdrantVectorStore, document_id: uuid.UUID, op: Op) -> bool:
    if op.chunks is None:
        return await store.delete_document(ORG, document_id, op.version)
    chunks = [
        VectorChunk(chunk_id=op.version * 100 + i, ordinal=i, vector=vector(op.version, i)) for i in range(op.chunks)
    ]
    return await store.upsert(ORG, WORK, document_id, op.version, chunks)


async def stored_points(store: QdrantVectorStore, document_id: uuid.UUID) -> list[dict[str, object]]:
    client = await store._open()
    records, _ = await client.scroll(
        store.collection, scroll_filter=points.of_document(ORG, document_id), limit=1000, with_payload=True
    )
    return [dict(record.payload or {}) for record in records]


@pytest.fixture(scope="module")
def qdrant_dir() -> Iterator[Path]:
    """A fresh directory, on tmpfs when there is one: local mode commits every point to SQLite on its
    own, an fsync each on a disk."""
    shm = Path("/dev/shm")  # noqa: S108 - a private directory is made inside it
    with tempfile.TemporaryDirectory(prefix="cx-qdrant-", dir=shm if shm.is_dir() else None) as scratch:
        yield Path(scratch)


@pytest.fixture(scope="module")
async def store(qdrant_dir: Path) -> AsyncIterator[QdrantVectorStore]:
    opened = QdrantVectorStore(QdrantSettings(url=None, path=qdrant_dir / "q", dimension=DIM))
    yield opened
    await opened.close()


@st.composite
def histories(draw: st.DrawFn) -> list[Op]:
    """The operations in the order they are applied, each at least once."""
    versions = draw(st.lists(st.integers(1, 8), min_size=1, max_size=5, unique=True))
    ops: list[Op] = []
    for v in versions:
        kind = draw(st.sampled_from(["upsert", "delete", "both"]))
        if kind != "delete":
            ops.append(Op(v, draw(st.integers(0, 3))))
        if kind != "upsert":
            ops.append(Op(v, None))
    duplicates = draw(st.lists(st.sampled_from(ops), max_size=4))
    return list(draw(st.permutations([*ops, *duplicates])))


def winner(ops: list[Op]) -> Op:
    """The highest version; of an upsert and a deletion of it, the deletion."""
    return max(ops, key=lambda op: (op.version, op.chunks is None))


EXAMPLES = settings(
    deadline=None,
    database=None,
    max_examples=60,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    phases=[Phase.explicit, Phase.generate, Phase.shrink],
)


async def check_highest_wins(store: QdrantVectorStore, document_id: uuid.UUID, ops: list[Op]) -> None:
    won = winner(ops)
    stored = await stored_points(store, document_id)
    chunks = [p for p in stored if p[points.KIND] == points.CHUNK_KIND]
    assert {p[points.CHUNK] for p in chunks} == won.chunk_ids()
    assert {p[points.VERSION] for p in chunks} <= {won.version}
    found = await store.search(ORG, vector(won.version, 0), 50, document_ids=frozenset({document_id}))
    assert {hit.chunk_id for hit in found} == won.chunk_ids()
    assert all(hit.document_id == document_id for hit in found)


@settings(EXAMPLES)
@given(history=histories())
async def test_sequential_writes_leave_the_highest_version(store: QdrantVectorStore, history: list[Op]) -> None:
    document_id = uuid.uuid4()
    applied = [await apply(store, document_id, op) for op in history]
    await check_highest_wins(store, document_id, history)
    # A write is refused exactly when a higher version, or a deletion of its own version, came before it.
    for index, op in enumerate(history):
        refused = any(w.version > op.version or w == Op(op.version, None) for w in history[:index])
        assert applied[index] is not refused, (history, index)


@settings(EXAMPLES)
@given(history=histories())
async def test_interleaved_writes_leave_the_highest_version(store: QdrantVectorStore, history: list[Op]) -> None:
    document_id = uuid.uuid4()
    await asyncio.gather(*(apply(store, document_id, op) for op in history))
    await check_highest_wins(store, document_id, history)


async def test_a_newer_version_written_mid_upsert_removes_the_older_points(store: QdrantVectorStore) -> None:
    """The race the post-write look exists for, forced: version 1 passes its first look, version 2 is
    written completely, then version 1 writes its points. Version 1 must notice and remove them."""
    document_id = uuid.uuid4()
    client = await store._open()
    real_upsert = client.upsert
    injected = False

    async def upsert_then_race(*args: object, **kwargs: object) -> models.UpdateResult:
        nonlocal injected
        if not injected:
            injected = True
            assert await apply(store, document_id, Op(2, 1))  # the newer writer runs to completion here
        return await real_upsert(*args, **kwargs)  # type: ignore[arg-type]

    client.upsert = upsert_then_race  # type: ignore[method-assign]
    try:
        assert not await apply(store, document_id, Op(1, 3))
    finally:
        client.upsert = real_upsert  # type: ignore[method-assign]
    assert injected
    await check_highest_wins(store, document_id, [Op(1, 3), Op(2, 1)])
