"""Embed what was stored without embeddings: passages indexed while the embedder was down, and
everything after a change of embedding model (see `embedding_space`). With a vector store of its own
(Qdrant), also mirror there the documents changed while it could not be reached (`mirror_pending`), and
all of them when the store is new to the index (`vector_mirror.follow_target`, on the first pass).

A periodic pass on every copy of the indexer (they do not collide: each write only fills embeddings
still missing). A pass first makes sure the index is in this copy's embedding space, then visits each
organization under its own row-level-security binding (the organizations table is readable to the
services' role; everything else is read bound to one organization) and embeds at most one bounded
batch of passages, one of memory entries and one of documents to mirror there — asking the embedder
and the store whether they are healthy once the pass finds work, and stopping the pass while one is
not. When any organization had a full batch, the next pass starts at once, so a large backlog is worked
through round-robin without starving small organizations.

A batch the embedder refuses (an answer it cannot give, not an outage) is embedded a text at a time: the
texts it refuses alone (too long for the endpoint's context, say) stay lexical-only and are set aside by
this copy for a while (`refused_texts`), so that one of them does not hold back the rest of its
organization (QA 34), and are tried again later, in case the fault was a passing one (QA 40). When it
refuses every text of a batch alone too, the fault is not theirs: nothing is set aside.
"""

import asyncio
import contextlib
import logging
import uuid
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Row, TextClause, text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cortex_contracts.vector_store import VectorStore, VectorStoreUnavailable
from cortex_embedding.batcher import BatchingEmbedder
from cortex_embedding.errors import EmbedderUnavailable, EmbeddingError
from cortex_indexer import embedding_space
from cortex_indexer.chunking import Chunk
from cortex_indexer.embedding_space import EmbeddingSpace
from cortex_indexer.refused_texts import RefusedTexts
from cortex_indexer.vector_mirror import follow_target, mirror_document, mirror_or_defer
from cortex_store.tenancy import org_transaction
from cortex_store.vector_text import vector_literal

log = logging.getLogger(__name__)

ORGANIZATIONS = text("SELECT id FROM organizations ORDER BY id")
PENDING_CHUNKS = text("""
SELECT c.id, c.document_id, c.heading, c.text, c.content_hash FROM kb_chunks c
WHERE c.organization_id = :org AND c.embedding IS NULL AND c.id <> ALL(CAST(:refused AS bigint[]))
ORDER BY c.id LIMIT :n
""")
# Documents first, in id order, as the indexer locks a document before its chunks: no deadlock.
LOCK_DOCUMENTS = text("SELECT id FROM kb_documents WHERE id = ANY(:ids) ORDER BY id FOR UPDATE")
FILL_CHUNKS = text("""
UPDATE kb_chunks c SET embedding = CAST(u.vector AS vector)
FROM unnest(CAST(:ids AS bigint[]), CAST(:hashes AS text[]), CAST(:vectors AS text[])) AS u(id, hash, vector)
WHERE c.id = u.id AND c.content_hash = u.hash AND c.embedding IS NULL
""")
MARK_EMBEDDED = text("""
UPDATE kb_documents d SET embedded = true
WHERE d.id = ANY(:ids) AND NOT d.embedded AND d.deleted_at IS NULL
  AND NOT EXISTS (SELECT 1 FROM kb_chunks c WHERE c.document_id = d.id AND c.embedding IS NULL)
""")
PENDING_MIRRORS = text("""
SELECT d.id FROM kb_documents d WHERE d.organization_id = :org AND d.mirror_pending ORDER BY d.id LIMIT :n
""")
MIRRORED = text("UPDATE kb_documents SET mirror_pending = false WHERE id = ANY(:ids)")
PENDING_ENTRIES = text("""
SELECT m.id, coalesce(m.embedding_input, m.content) AS input FROM memory_entry m
WHERE m.organization_id = :org AND m.embedding IS NULL AND m.id <> ALL(CAST(:refused AS uuid[]))
ORDER BY m.id LIMIT :n
""")
FILL_ENTRIES = text("""
UPDATE memory_entry m SET embedding = CAST(u.vector AS vector)
FROM unnest(CAST(:ids AS uuid[]), CAST(:vectors AS text[])) AS u(id, vector)
WHERE m.id = u.id AND m.embedding IS NULL
""")


def _kept(
    pending: list[Row[Any]], results: list[list[float] | EmbeddingError], refused: RefusedTexts[Any], what: str
) -> tuple[list[Row[Any]], list[list[float]]]:
    """The rows embedded and their vectors; the refused rows are set aside in `refused`."""
    rows, vectors = [], []
    for row, result in zip(pending, results, strict=True):
        if isinstance(result, EmbeddingError):
            refused.refused(row.id)
            log.warning("%s %s left lexical-only for now: the embedder refused it (%s)", what, row.id, result)
        else:
            refused.embedded(row.id)
            rows.append(row)
            vectors.append(result)
    return rows, vectors


@dataclass
class Backfill:
    sessions: async_sessionmaker[AsyncSession]
    embedder: BatchingEmbedder
    space: EmbeddingSpace
    batch: int = 64
    interval_seconds: float = 10.0
    vectors: VectorStore | None = None  # a store of its own (Qdrant): filled documents are mirrored there
    refused_chunks: RefusedTexts[int] = field(default_factory=RefusedTexts)  # set aside a while, then tried again
    refused_entries: RefusedTexts[uuid.UUID] = field(default_factory=RefusedTexts)
    store_followed: bool = False  # the store mirrored to is the one recorded, or was rebuilt (vector_mirror)

    async def run(self, stop: asyncio.Event) -> None:
        """Pass after pass until `stop`; a failing pass is logged and the next one tries again."""
        while not stop.is_set():
            more = False
            try:
                more = await self.run_pass()
            except (EmbeddingError, VectorStoreUnavailable) as exc:
                log.warning("embedding backfill paused: %s", exc)
            except Exception:
                log.exception("embedding backfill pass failed")
            if not more:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.interval_seconds)

    async def run_pass(self) -> bool:
        """One round over the organizations. True when some organization has more waiting."""
        if not self.space.adopted and not await embedding_space.adopt(self.sessions, self.embedder, self.space):
            return False
        if self.space.superseded:
            return False
        if not self.store_followed and self.space.dimension is not None:
            await follow_target(self.sessions, self.vectors, self.space.model, self.space.dimension)
            self.store_followed = True
        async with self.sessions() as session:
            organizations = list((await session.scalars(ORGANIZATIONS)).all())
        more = False
        checked = False  # the endpoint is asked whether it is healthy once a pass finds work, not before
        for organization_id in organizations:
            chunks = await self._pending(PENDING_CHUNKS, organization_id, self.refused_chunks)
            entries = await self._pending(PENDING_ENTRIES, organization_id, self.refused_entries)
            mirrors = await self._pending(PENDING_MIRRORS, organization_id) if self.vectors is not None else []
            if not chunks and not entries and not mirrors:
                continue
            if not checked:
                reason = await self._unhealthy()
                if reason is not None:
                    log.info("embedder %s or vector store unhealthy (%s): backfill waits", self.space.model, reason)
                    return False
                checked = True
            try:
                done = await self._fill_chunks(organization_id, chunks) if chunks else 0
                done_entries = await self._fill_entries(organization_id, entries) if entries else 0
                done_mirrors = await self._mirror(organization_id, mirrors) if mirrors else 0
            except EmbedderUnavailable:
                raise  # down again: the whole pass waits
            except EmbeddingError as exc:  # this organization's texts were refused: the others go on
                log.warning("embedding backfill skipped organization %s: %s", organization_id, exc)
                continue
            more = more or self.batch in (done, done_entries, done_mirrors)
        return more

    async def _unhealthy(self) -> str | None:
        """Why the embedder, or the store the passages are mirrored to, cannot take work (None: both can):
        passages embedded for a store that is down would be embedded again on the next pass."""
        for part in (self.embedder.embedder, self.vectors):
            health = getattr(part, "health", None)
            if health is not None and (reason := await health()) is not None:
                return str(reason)
        return None

    async def _pending(
        self, query: TextClause, organization_id: uuid.UUID, refused: RefusedTexts[Any] | None = None
    ) -> list[Row[Any]]:
        params: dict[str, Any] = {"org": organization_id, "n": self.batch}
        if refused is not None:
            params["refused"] = refused.set_aside()
        async with org_transaction(self.sessions, organization_id) as session:
            return list(await session.execute(query, params))

    async def _embed(self, texts: list[str], retries: bool) -> list[list[float] | EmbeddingError]:
        """The texts' vectors. When the embedder refuses the call, each text alone: a refused one's error
        in its place. When every text is refused alone too, the fault is taken for the endpoint's and the
        call's error raised — unless they are all `retries`, texts refused before while others were embedded."""
        try:
            return list(await self.embedder.embed(texts))
        except EmbedderUnavailable:
            raise
        except EmbeddingError as refused:
            if len(texts) == 1:
                if retries:
                    return [refused]
                raise
            whole = refused
        each: list[list[float] | EmbeddingError] = []
        for one in texts:
            try:
                each += await self.embedder.embed([one])
            except EmbedderUnavailable:
                raise
            except EmbeddingError as exc:
                each.append(exc)
        if not retries and all(isinstance(result, EmbeddingError) for result in each):
            raise whole
        return each

    async def _fill_chunks(self, organization_id: uuid.UUID, pending: list[Row[Any]]) -> int:
        texts = [Chunk(0, row.heading, row.text).embedding_input() for row in pending]
        results = await self._embed(texts, retries=all(row.id in self.refused_chunks for row in pending))
        rows, vectors = _kept(pending, results, self.refused_chunks, "passage")
        documents = sorted({row.document_id for row in rows})
        async with org_transaction(self.sessions, organization_id) as session:
            if not await embedding_space.holds(session, self.space):
                return 0
            await session.execute(LOCK_DOCUMENTS, {"ids": documents})
            params: dict[str, Any] = {
                "ids": [row.id for row in rows],
                "hashes": [row.content_hash for row in rows],
                "vectors": [vector_literal(v) for v in vectors],
            }
            await session.execute(FILL_CHUNKS, params)
            await session.execute(MARK_EMBEDDED, {"ids": documents})
            if self.vectors is not None:
                for document_id in documents:
                    await mirror_or_defer(session, self.vectors, document_id)
        log.info("backfilled %d passage embeddings in organization %s", len(rows), organization_id)
        return len(pending)

    async def _fill_entries(self, organization_id: uuid.UUID, pending: list[Row[Any]]) -> int:
        results = await self._embed(
            [row.input for row in pending], retries=all(row.id in self.refused_entries for row in pending)
        )
        rows, vectors = _kept(pending, results, self.refused_entries, "memory entry")
        async with org_transaction(self.sessions, organization_id) as session:
            if not await embedding_space.holds(session, self.space):
                return 0
            params = {"ids": [row.id for row in rows], "vectors": [vector_literal(v) for v in vectors]}
            await session.execute(FILL_ENTRIES, params)
        log.info("backfilled %d memory entry embeddings in organization %s", len(rows), organization_id)
        return len(pending)

    async def _mirror(self, organization_id: uuid.UUID, rows: list[Row[Any]]) -> int:
        """Mirror documents changed while the store could not be reached; a store down again pauses the pass."""
        assert self.vectors is not None
        documents = sorted(row.id for row in rows)
        async with org_transaction(self.sessions, organization_id) as session:
            await session.execute(LOCK_DOCUMENTS, {"ids": documents})
            for document_id in documents:
                await mirror_document(session, self.vectors, document_id)
            await session.execute(MIRRORED, {"ids": documents})
        log.info("mirrored %d documents to the vector store in organization %s", len(rows), organization_id)
        return len(rows)
