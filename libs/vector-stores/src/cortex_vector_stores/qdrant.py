"""Chunk vectors in Qdrant: a server when `CORTEX_QDRANT_URL` is set, else qdrant-client's local mode.

Local mode keeps the collection in `CORTEX_QDRANT_PATH` and holds an exclusive lock on it: only one
process may open it (a second one fails with "already accessed by another instance"). It searches by
brute force in Python on the event loop and persists every point with its own SQLite commit, so it is
for a single process and small collections (qdrant-client warns above 20,000 points); run a server
for anything else. The client is opened on first use, so `create()` touches nothing.

Per document the highest version wins without any coordination between writers: see `upsert`.
"""

import asyncio
import functools
import os
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, ParamSpec, TypeVar, cast

from qdrant_client import AsyncQdrantClient, models
from qdrant_client.http.exceptions import ApiException, UnexpectedResponse

from cortex_contracts.outage import Outage
from cortex_contracts.vector_store import VectorChunk, VectorHit, VectorStoreUnavailable
from cortex_vector_stores import qdrant_points as points
from cortex_vector_stores.settings import QdrantSettings

_KEYWORD_INDEXES = (points.OWNER, points.DOCUMENT, points.WORK)

P = ParamSpec("P")
R = TypeVar("R")


class LocalFolderTaken(Exception):
    """Another client holds local mode's folder: searches answer from the lexical leg meanwhile (QA 47: a
    second service on the folder answered every search with a 502)."""


def _unavailable_when_unreachable(method: Callable[P, Awaitable[R]]) -> Callable[P, Coroutine[Any, Any, R]]:
    """qdrant-client's errors (not reached, timed out, a server error) as the protocol's VectorStoreUnavailable;
    during an outage, at once (see `outage`). For QdrantVectorStore's methods: the first argument is the store."""

    @functools.wraps(method)
    async def reached(*args: P.args, **kwargs: P.kwargs) -> R:
        store = cast("QdrantVectorStore", args[0])
        if (refusal := store.outage.refusal()) is not None:
            raise VectorStoreUnavailable(refusal)
        try:
            result = await method(*args, **kwargs)
        except (ApiException, LocalFolderTaken) as exc:
            reason = f"qdrant: {exc}"
            store.outage.began(reason)
            raise VectorStoreUnavailable(reason) from exc
        store.outage.ended()
        return result

    return reached


class QdrantVectorStore:
    name = "qdrant"
    namespace_per_work = False  # one filtered query covers any set of Works

    def __init__(self, settings: QdrantSettings) -> None:
        self.settings = settings
        self.collection = settings.collection
        self.dimension = settings.dimension  # what a collection made here holds; `rebuild` sets it
        self._client: AsyncQdrantClient | None = None
        self._opening = asyncio.Lock()
        self.outage = Outage(settings.fail_fast_seconds)

    @property
    def local(self) -> bool:
        return self.settings.url is None

    def _connect(self) -> AsyncQdrantClient:
        settings = self.settings
        if settings.url is None:
            settings.path.mkdir(parents=True, exist_ok=True)
            try:
                return AsyncQdrantClient(path=str(settings.path))
            except RuntimeError as exc:
                if "already accessed" not in str(exc):
                    raise
                # The folder's lock, held by another process (or client).
                raise LocalFolderTaken(f"{exc} Set CORTEX_QDRANT_URL to a Qdrant server for every service.") from exc
        api_key = settings.api_key.get_secret_value() if settings.api_key else None
        # No version check at construction: the client makes it with a blocking HTTP call.
        return AsyncQdrantClient(
            url=settings.url, api_key=api_key, timeout=settings.timeout_seconds, check_compatibility=False
        )

    async def _open(self) -> AsyncQdrantClient:
        """The client, with the collection and its payload indexes made if missing."""
        if self._client is not None:
            return self._client
        async with self._opening:
            if self._client is None:
                client = self._connect()
                try:
                    await self._ensure_collection(client)
                except BaseException:
                    await client.close()
                    raise
                self._client = client
        return self._client

    async def _ensure_collection(self, client: AsyncQdrantClient) -> None:
        if await client.collection_exists(self.collection):
            return
        try:
            await client.create_collection(
                self.collection,
                vectors_config={
                    points.VECTOR: models.VectorParams(size=self.dimension, distance=models.Distance.COSINE)
                },
            )
        except UnexpectedResponse:  # another process created it first
            if not await client.collection_exists(self.collection):
                raise
            return
        if self.local:
            return  # local mode ignores payload indexes (and warns about each)
        # Made before any point, so the HNSW graph gets the extra links that keep filtered searches
        # accurate. The organization is the tenant key: Qdrant co-locates each tenant's points.
        await client.create_payload_index(
            self.collection,
            points.ORGANIZATION,
            models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, is_tenant=True),
        )
        for key in _KEYWORD_INDEXES:
            await client.create_payload_index(self.collection, key, models.PayloadSchemaType.KEYWORD)
        await client.create_payload_index(self.collection, points.VERSION, models.PayloadSchemaType.INTEGER)

    @property
    def target(self) -> str:
        """Where the points go: the server (or local directory) and collection, as the indexer records it."""
        where = self.settings.url or f"local:{self.settings.path.resolve()}"
        return f"qdrant {where} {self.collection}"

    @_unavailable_when_unreachable
    async def rebuild(self, dimension: int) -> None:
        """Drop the collection and make it anew, empty, for vectors of `dimension`."""
        self.dimension = dimension
        client = await self._open()
        for _ in range(3):  # another process (an aggregator's first search) may make it between the two
            await client.delete_collection(self.collection)
            await self._ensure_collection(client)
            made = (await client.get_collection(self.collection)).config.params.vectors
            size = made[points.VECTOR].size if isinstance(made, dict) else None
            if size == dimension:
                return
        raise VectorStoreUnavailable(f"qdrant: collection {self.collection} keeps being made for dimension {size}")

    async def _exists(self, client: AsyncQdrantClient, where: models.Filter) -> bool:
        return (await client.count(self.collection, count_filter=where, exact=True)).count > 0

    async def _delete(self, client: AsyncQdrantClient, where: models.Filter) -> None:
        await client.delete(self.collection, points_selector=models.FilterSelector(filter=where), wait=True)

    @_unavailable_when_unreachable
    async def upsert(
        self,
        organization_id: uuid.UUID,
        work_id: uuid.UUID | None,
        document_id: uuid.UUID,
        version: int,
        chunks: Sequence[VectorChunk],
    ) -> bool:
        """Write this version's points, then drop older versions' — unless a newer version is there.

        Writers of different versions need no lock between them: each writes its own points (ids carry
        the version), removes what is older, then looks again for anything newer and, if it finds it,
        removes its own points. Whatever the interleaving, the older writer either had its points
        removed by the newer one's clean-up or sees the newer points in its final look.
        """
        client = await self._open()
        org, doc = organization_id, document_id
        if await self._exists(client, points.supersedes(org, doc, version)):
            return False
        if chunks:
            await client.upsert(
                self.collection,
                points=[
                    models.PointStruct(
                        id=points.chunk_point_id(org, doc, version, chunk.ordinal),
                        vector={points.VECTOR: list(chunk.vector)},
                        payload=points.chunk_payload(org, work_id, doc, version, chunk.chunk_id, chunk.ordinal),
                    )
                    for chunk in chunks
                ],
                wait=True,
            )
        else:  # nothing else would record that this version exists
            await self._mark(client, org, doc, version, points.EMPTY_KIND)
        await self._delete(client, points.older_than(org, doc, version))
        # A retry of this version with fewer passages leaves none of the earlier attempt's extras.
        await self._delete(client, points.chunks_of_version(org, doc, version, from_ordinal=len(chunks)))
        if await self._exists(client, points.supersedes(org, doc, version)):
            await self._delete(client, points.upserted_at(org, doc, version))
            return False
        return True

    async def _mark(self, client: AsyncQdrantClient, org: uuid.UUID, doc: uuid.UUID, version: int, kind: str) -> None:
        marker = models.PointStruct(
            id=points.marker_point_id(org, doc, version, kind),
            vector={},
            payload=points.marker_payload(org, doc, version, kind),
        )
        await client.upsert(self.collection, points=[marker], wait=True)

    @_unavailable_when_unreachable
    async def delete_document(self, organization_id: uuid.UUID, document_id: uuid.UUID, version: int) -> bool:
        """Leave a tombstone of `version` and drop everything older and this version's upsert — unless a
        newer version, or this deletion, is there (a deletion wins a tie, as in PostgreSQL)."""
        client = await self._open()
        org, doc = organization_id, document_id
        if await self._exists(client, points.supersedes(org, doc, version)):
            return False
        await self._mark(client, org, doc, version, points.TOMBSTONE_KIND)
        await self._delete(client, points.older_than(org, doc, version))
        await self._delete(client, points.upserted_at(org, doc, version))
        if await self._exists(client, points.of_document(org, doc, points.newer(version))):
            await self._delete(client, points.marker_of_version(org, doc, version, points.TOMBSTONE_KIND))
            return False
        return True

    @_unavailable_when_unreachable
    async def search(
        self,
        organization_id: uuid.UUID,
        vector: Sequence[float],
        k: int,
        *,
        work_ids: frozenset[uuid.UUID] | None = None,
        document_ids: frozenset[uuid.UUID] | None = None,
    ) -> list[VectorHit]:
        """One query, must-filtered on the organization (and the Works and documents when given).

        A server may walk its HNSW graph and come back short under a selective filter; then the same
        query runs exactly if more matching points exist, so k hits come back whenever k exist.
        """
        if k < 1 or work_ids == frozenset() or document_ids == frozenset():
            return []
        client = await self._open()
        where = points.search_filter(organization_id, work_ids, document_ids)
        found = await self._query(client, vector, k, where, exact=False)
        if len(found) < k and not self.local:  # local mode is always exact
            available = (await client.count(self.collection, count_filter=where, exact=True)).count
            if available > len(found):
                found = await self._query(client, vector, k, where, exact=True)
        return found

    async def _query(
        self, client: AsyncQdrantClient, vector: Sequence[float], k: int, where: models.Filter, *, exact: bool
    ) -> list[VectorHit]:
        response = await client.query_points(
            self.collection,
            query=list(vector),
            using=points.VECTOR,
            query_filter=where,
            search_params=models.SearchParams(exact=True) if exact else None,
            limit=k,
            with_payload=[points.DOCUMENT, points.CHUNK],
        )
        return [
            VectorHit(uuid.UUID(str(hit.payload[points.DOCUMENT])), int(hit.payload[points.CHUNK]), hit.score)
            for hit in response.points
            if hit.payload is not None
        ]

    async def health(self) -> str | None:
        """Whether the server (or the open local collection) answers. A local-mode store that this
        process has not used yet is not opened here: that would take the directory's one-process lock
        away from the service that needs it (a plugin listing in the gateway, say); only its directory is
        checked, that it is one (or can be made) and can be written."""
        if self.local and self._client is None:
            return self._unusable_directory()
        try:
            client = await self._open()
            await client.get_collection(self.collection)
        except Exception as exc:  # noqa: BLE001 - any failure is the answer, not a crash
            where = self.settings.url or f"local mode at {self.settings.path}"
            return f"qdrant ({where}): {exc}"
        self.outage.ended()  # the probe is never refused: it is how an outage is seen to end
        return None

    def _unusable_directory(self) -> str | None:
        path = self.settings.path
        existing = next(part for part in (path, *path.parents) if part.exists())
        if not existing.is_dir():
            return f"qdrant (local mode at {path}): {existing} is not a directory"
        if not os.access(existing, os.W_OK | os.X_OK):
            return f"qdrant (local mode at {path}): {existing} is not writable"
        return None

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.close()


def create() -> QdrantVectorStore:
    """The `qdrant` vector_store plugin, configured from `CORTEX_QDRANT_*`."""
    return QdrantVectorStore(QdrantSettings())
