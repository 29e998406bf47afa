"""What a composition root does after loading a `vector_store` plugin: hand it the database if it
keeps its vectors there (pgvector). Stores with their own server (Qdrant) need nothing."""

from typing import Protocol, runtime_checkable

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cortex_contracts.vector_store import VectorStore


@runtime_checkable
class UsesDatabase(Protocol):
    def bind(self, sessions: async_sessionmaker[AsyncSession]) -> object: ...


def bind_database(store: VectorStore, sessions: async_sessionmaker[AsyncSession]) -> VectorStore:
    if isinstance(store, UsesDatabase):
        store.bind(sessions)
    return store


def vectors_live_in_database(store: VectorStore) -> bool:
    """True: the indexer's own chunk rows carry the vectors (its transaction is the write); False: the
    indexer must also `upsert` / `delete_document` into the store."""
    return isinstance(store, UsesDatabase)


def store_of_its_own(plugin: object) -> VectorStore | None:
    """The `vector_store` plugin as the indexer and aggregator use it: None when the vectors live in the
    passages' own rows (pgvector: written by the indexer's transaction, read in the dense leg's SQL)."""
    if not isinstance(plugin, VectorStore):
        raise TypeError(f"vector_store plugin {plugin!r} does not implement the VectorStore protocol")
    return None if vectors_live_in_database(plugin) else plugin
