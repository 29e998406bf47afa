"""Qdrant's own engine in this process (qdrant-edge), laid out and queried as `QdrantVectorStore` does
against a server: for benchmarking only, where no Qdrant server can run (no binary, no Docker).

Qdrant Edge is the server's segment, HNSW and payload-index code as a library. The shard is made as
`QdrantVectorStore._ensure_collection` makes a collection (cosine `dense` vector; the server's default
HNSW, m 16, ef_construct 100, full scan below 10,000 KB; the organization a tenant keyword index; owner,
document and Work keyword indexes; version an integer index), holds the very points and payloads of
`qdrant_points`, and is searched with the same must-filter, default `ef` and exact fallback when a walk
comes back short. What it leaves out is the server's network hop (HTTP or gRPC, ~0.2–1 ms a query) and
its request handling: figures from here are a floor for a server on the same machine, not a server.

Edge calls block, so each search runs on a worker thread, as a server would serve four clients at once.
"""

import asyncio
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path

import qdrant_edge as edge

from cortex_contracts.vector_store import VectorHit
from cortex_vector_stores import qdrant_points as points

# The server's defaults for a collection made without an HNSW config (what `_ensure_collection` does).
SERVER_HNSW = edge.HnswIndexConfig(m=16, ef_construct=100, full_scan_threshold=10_000)


class EdgeShardStore:
    name = "qdrant-edge"

    def __init__(self, path: Path, dimension: int) -> None:
        config = edge.EdgeConfig(
            vectors={points.VECTOR: edge.EdgeVectorParams(size=dimension, distance=edge.Distance.Cosine)},
            hnsw_config=SERVER_HNSW,
        )
        self.shard = edge.EdgeShard.create(str(path), config)
        # Before any point, as on the server, so the graph gets the links that keep filtered walks whole.
        self.shard.update(
            edge.UpdateOperation.create_field_index(points.ORGANIZATION, edge.KeywordIndexParams(is_tenant=True))
        )
        for key in (points.OWNER, points.DOCUMENT, points.WORK):
            self.shard.update(edge.UpdateOperation.create_field_index(key, edge.PayloadSchemaType.Keyword))
        self.shard.update(edge.UpdateOperation.create_field_index(points.VERSION, edge.PayloadSchemaType.Integer))

    def upsert(self, batch: Iterable[tuple[str, Sequence[float], dict[str, object]]]) -> None:
        self.shard.update(
            edge.UpdateOperation.upsert_points(
                [edge.Point(point_id, {points.VECTOR: list(vector)}, payload) for point_id, vector, payload in batch]
            )
        )

    def build(self) -> None:
        """Build the HNSW graph now, as the server's optimizer would in the background."""
        self.shard.optimize()

    async def search(self, organization_id: uuid.UUID, vector: Sequence[float], k: int) -> list[VectorHit]:
        return await asyncio.to_thread(self._search, organization_id, vector, k)

    def _search(self, organization_id: uuid.UUID, vector: Sequence[float], k: int) -> list[VectorHit]:
        organization = edge.FieldCondition(key=points.ORGANIZATION, match=edge.MatchValue(str(organization_id)))
        where = edge.Filter(must=[organization])
        found = self._query(vector, k, where, exact=False)
        if len(found) < k and self.shard.count(edge.CountRequest(filter=where, exact=True)) > len(found):
            found = self._query(vector, k, where, exact=True)
        return found

    def _query(self, vector: Sequence[float], k: int, where: edge.Filter, *, exact: bool) -> list[VectorHit]:
        hits = self.shard.search(
            edge.SearchRequest(
                query=edge.Query.Nearest(list(vector), using=points.VECTOR),
                limit=k,
                filter=where,
                params=edge.SearchParams(exact=exact),
                with_payload=True,
            )
        )
        return [
            VectorHit(uuid.UUID(str(hit.payload[points.DOCUMENT])), int(str(hit.payload[points.CHUNK])), hit.score)
            for hit in hits
            if hit.payload is not None
        ]

    async def close(self) -> None:
        self.shard.close()
