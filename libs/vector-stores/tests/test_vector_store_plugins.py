"""The plugins as the runtime loads them: entry points, zero-argument factories reading the environment,
nothing opened until first use, and local-mode Qdrant's one-process lock reported, not hidden."""

import uuid
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from cortex_contracts.vector_store import VectorStore, VectorStoreUnavailable
from cortex_vector_stores import pgvector, qdrant
from cortex_vector_stores.binding import vectors_live_in_database
from cortex_vector_stores.settings import QdrantSettings


def test_both_stores_are_entry_points_whose_factories_make_vector_stores(  # registered by cortex-plugins
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CORTEX_QDRANT_PATH", str(tmp_path / "q"))
    monkeypatch.delenv("CORTEX_QDRANT_URL", raising=False)
    found = {ep.name: ep for ep in entry_points(group="cortex.vector_store")}
    assert {"pgvector", "qdrant"} <= set(found)
    for name in ("pgvector", "qdrant"):
        store = found[name].load()()
        assert isinstance(store, VectorStore)
        assert store.name == name
        assert store.namespace_per_work is False
    assert vectors_live_in_database(pgvector.create())
    assert not vectors_live_in_database(qdrant.create())


def test_qdrant_settings_come_from_the_environment_and_nothing_opens_at_create(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CORTEX_QDRANT_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("CORTEX_QDRANT_API_KEY", "k")
    monkeypatch.setenv("CORTEX_QDRANT_COLLECTION", "chunks_test")
    server = qdrant.create()
    assert (server.settings.url, server.collection, server.local) == ("http://127.0.0.1:1", "chunks_test", False)
    monkeypatch.delenv("CORTEX_QDRANT_URL")
    monkeypatch.setenv("CORTEX_QDRANT_PATH", str(tmp_path / "local"))
    local = qdrant.create()
    assert local.local
    assert not (tmp_path / "local").exists()  # opened on first use, not by the factory


async def test_a_second_process_on_the_same_local_path_is_told_why(tmp_path: Path) -> None:
    settings = QdrantSettings(url=None, path=tmp_path / "q", dimension=4)
    first, second = qdrant.QdrantVectorStore(settings), qdrant.QdrantVectorStore(settings)
    try:
        assert await second.health() is None  # not opened by a health check: the lock stays free
        assert await first.search(uuid.uuid4(), [1.0, 0.0, 0.0, 0.0], 3) == []
        assert await first.health() is None
        with pytest.raises(VectorStoreUnavailable, match="already accessed by another instance"):
            await second.search(uuid.uuid4(), [1.0, 0.0, 0.0, 0.0], 3)
    finally:
        await first.close()
        await second.close()


async def test_an_unreachable_server_is_unhealthy_not_a_crash() -> None:
    store = qdrant.QdrantVectorStore(QdrantSettings(url="http://127.0.0.1:9", timeout_seconds=1))
    problem = await store.health()
    assert problem is not None and problem.startswith("qdrant (http://127.0.0.1:9)")
    await store.close()


async def test_pgvector_must_be_bound_to_the_services_sessions() -> None:
    with pytest.raises(RuntimeError, match="bind"):
        await pgvector.create().search(uuid.uuid4(), [0.0] * 4, 3)
    assert "bind" in (await pgvector.create().health() or "")


async def test_an_unopened_local_store_whose_directory_cannot_be_made_is_unhealthy(tmp_path: Path) -> None:
    """Before: healthy until first used, then every write failed (QA: a path under a file)."""
    (tmp_path / "a-file").write_text("not a directory")
    store = qdrant.QdrantVectorStore(QdrantSettings(url=None, path=tmp_path / "a-file" / "q", dimension=4))
    assert await store.health() == f"qdrant (local mode at {tmp_path}/a-file/q): {tmp_path}/a-file is not a directory"
    fine = qdrant.QdrantVectorStore(QdrantSettings(url=None, path=tmp_path / "new" / "q", dimension=4))
    assert await fine.health() is None
    assert not (tmp_path / "new").exists()  # checked, not made
