"""Index and delete documents: the indexer's work, independent of where the event came from.

Each function runs one transaction; the event it returns is published by the caller after the commit.
"""

import hashlib
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cortex_contracts.documents import DocumentDeleted, DocumentIndexed, DocumentUpserted
from cortex_contracts.uploads import UploadCreated
from cortex_contracts.vector_store import VectorStore
from cortex_embedding.errors import EmbeddingError
from cortex_indexer import embedding_space, repository
from cortex_indexer.chunking import Chunk, chunk_document
from cortex_indexer.embedding_space import EmbeddingSpace
from cortex_indexer.reports import stage_report
from cortex_indexer.vector_mirror import mirror_document
from cortex_messaging.delivery import PoisonMessage
from cortex_store.tenancy import bind_organization

log = logging.getLogger(__name__)

EmbedFn = Callable[[list[str]], Awaitable[list[list[float]]]]
FAILED = "failed"  # status of a document whose file could not be read


class UnknownOrganization(Exception):
    """Retried: the organization may be created moments later (catalog events race KB events)."""


@dataclass(frozen=True)
class IndexingContext:
    sessions: async_sessionmaker[AsyncSession]
    embed: EmbedFn | None  # None: lexical-only
    consumer: str
    space: EmbeddingSpace | None = None  # the embedder's space; embeddings are written only while it is active
    vectors: VectorStore | None = None  # a store of its own (Qdrant) mirrored in the same transaction; None: pgvector


@dataclass(frozen=True)
class EventMeta:
    event_id: str
    organization_id: uuid.UUID
    tenant_id: str | None
    time: datetime


def _check_owner(stored: repository.StoredVersion | None, organization_id: uuid.UUID) -> None:
    if stored is not None and stored.organization_id != organization_id:
        raise PoisonMessage("document id already belongs to another organization")


@dataclass(frozen=True)
class Claim:
    newer: bool  # False: the event was handled before, or a newer (or equal) version is stored
    stored: repository.StoredVersion | None


async def _claim_newer(
    session: AsyncSession,
    ctx: IndexingContext,
    meta: EventMeta,
    document_id: uuid.UUID,
    version: int,
) -> Claim:
    """In the change's transaction: record the event, lock the document row, compare versions."""
    await bind_organization(session, meta.organization_id)
    if not await repository.claim_event(session, ctx.consumer, meta.event_id):
        return Claim(newer=False, stored=None)
    if not await repository.organization_exists(session, meta.organization_id):
        raise UnknownOrganization(str(meta.organization_id))
    stored = await repository.stored_version(session, document_id, lock=True)
    _check_owner(stored, meta.organization_id)
    return Claim(newer=stored is None or stored.version < version, stored=stored)


async def is_stale(ctx: IndexingContext, meta: EventMeta, document_id: uuid.UUID, version: int) -> bool:
    """Cheap read before the expensive part: a duplicate or an older version needs no embedding."""
    return await _prior_embeddings(ctx, meta, document_id, version, want_embeddings=False) is None


async def _prior_embeddings(
    ctx: IndexingContext, meta: EventMeta, document_id: uuid.UUID, version: int, *, want_embeddings: bool = True
) -> dict[str, list[float]] | None:
    """None when the event is stale (a duplicate, or not newer than what is stored); else the stored
    document's embeddings by passage hash, for the passages an edit left unchanged. One transaction."""
    async with ctx.sessions() as session, session.begin():
        await bind_organization(session, meta.organization_id)
        if await repository.was_processed(session, ctx.consumer, meta.event_id):
            return None
        stored = await repository.stored_version(session, document_id)
        _check_owner(stored, meta.organization_id)
        if stored is not None and stored.version >= version:
            return None
        if stored is None or not want_embeddings:
            return {}
        return await repository.embeddings_by_hash(session, document_id)


Embeddings = list[list[float] | None]  # one per chunk; None: stored lexical-only, backfilled later


def fully_embedded(embeddings: Embeddings | None) -> bool:
    return embeddings is not None and all(vector is not None for vector in embeddings)


async def _embed_changed(
    ctx: IndexingContext, document_id: uuid.UUID, chunks: list[Chunk], known: dict[str, list[float]]
) -> Embeddings | None:
    """Reuse the embeddings of unchanged passages (`known`, by hash), embed the rest. When the embedder
    fails (after its own retries) the document is still indexed: the new passages lexical-only, until the
    backfill embeds them."""
    if ctx.embed is None or (ctx.space is not None and not ctx.space.writable):
        return None
    missing = [chunk for chunk in chunks if chunk.content_hash not in known]
    try:
        vectors = await ctx.embed([c.embedding_input() for c in missing])
    except EmbeddingError as exc:
        log.warning("document %s indexed without %d embeddings (backfilled later): %s", document_id, len(missing), exc)
        return [known.get(chunk.content_hash) for chunk in chunks]
    fresh = dict(zip((c.content_hash for c in missing), vectors, strict=True))
    return [known.get(chunk.content_hash) or fresh[chunk.content_hash] for chunk in chunks]


async def index_document(
    ctx: IndexingContext,
    meta: EventMeta,
    doc: DocumentUpserted,
    body: str,
    *,
    upload: UploadCreated | None = None,
    failure_reason: str | None = None,
) -> DocumentIndexed | None:
    """Store the document and its passages unless a newer version is already stored.

    `upload` is the file the document was extracted from, recorded in the same transaction; with a
    `failure_reason` the document is stored as failed, with no passages (nothing of it is searchable).
    """
    if doc.organization_id != meta.organization_id:
        raise PoisonMessage("payload organizationId differs from the event's orgid")
    known = await _prior_embeddings(ctx, meta, doc.document_id, doc.version, want_embeddings=not failure_reason)
    if known is None:
        return None
    chunks = [] if failure_reason else chunk_document(doc.title, body)
    embeddings = None if failure_reason else await _embed_changed(ctx, doc.document_id, chunks, known)
    now = datetime.now(UTC)
    async with ctx.sessions() as session, session.begin():
        if embeddings is not None and ctx.space is not None and not await embedding_space.holds(session, ctx.space):
            embeddings = None  # the index moved to another model meanwhile: never store vectors of two models
        claim = await _claim_newer(session, ctx, meta, doc.document_id, doc.version)
        if not claim.newer:
            return None
        if upload is not None:
            await repository.upsert_upload(session, upload)
        await repository.upsert_document(
            session,
            {
                "id": doc.document_id,
                "organization_id": doc.organization_id,
                "tenant_id": meta.tenant_id,
                "scope": "work" if doc.work_id else "org",
                "work_id": doc.work_id,
                "title": doc.title,
                "doc_class": doc.doc_class,
                "status": FAILED if failure_reason else doc.status.value,
                "failure_reason": failure_reason,
                "upload_id": doc.upload_id,
                "agent_id": doc.agent_id,
                "agent_run_id": doc.agent_run_id,
                "source": doc.source,
                "tags": sorted(set(doc.tags)),
                "body": body,
                "content_hash": hashlib.sha256(body.encode()).hexdigest(),
                "version": doc.version,
                "embedded": fully_embedded(embeddings),
                "updated_at": doc.updated_at or meta.time,
                "last_indexed_at": now,
                "deleted_at": None,
            },
        )
        existing = claim.stored is not None  # a new document has no tags, citations or chunks to replace
        await repository.replace_tags(session, doc.organization_id, doc.document_id, doc.tags, existing=existing)
        await repository.replace_citations(session, doc.organization_id, doc.document_id, doc.cites, existing=existing)
        await repository.replace_chunks(
            session,
            doc.document_id,
            [
                {
                    "document_id": doc.document_id,
                    "organization_id": doc.organization_id,
                    "ordinal": chunk.ordinal,
                    "heading": chunk.heading,
                    "text": chunk.text,
                    "content_hash": chunk.content_hash,
                    "embedding": embeddings[chunk.ordinal] if embeddings is not None else None,
                }
                for chunk in chunks
            ],
            existing=existing,
        )
        if ctx.vectors is not None:
            await mirror_document(session, ctx.vectors, doc.document_id)
        report = DocumentIndexed(
            document_id=doc.document_id,
            organization_id=doc.organization_id,
            version=doc.version,
            chunks=len(chunks),
            embedded=fully_embedded(embeddings),
            failure_reason=failure_reason,
        )
        await stage_report(session, report, meta.tenant_id)
    return report


async def delete_document(ctx: IndexingContext, meta: EventMeta, doc: DocumentDeleted) -> DocumentIndexed | None:
    if doc.organization_id != meta.organization_id:
        raise PoisonMessage("payload organizationId differs from the event's orgid")
    async with ctx.sessions() as session, session.begin():
        claim = await _claim_newer(session, ctx, meta, doc.document_id, doc.version)
        if not claim.newer:
            return None
        tombstoned = await repository.tombstone_document(
            session,
            doc.document_id,
            doc.organization_id,
            doc.version,
            datetime.now(UTC),
            exists_already=claim.stored is not None,
        )
        if not tombstoned:
            raise PoisonMessage("document id already belongs to another organization")
        if ctx.vectors is not None:
            await mirror_document(session, ctx.vectors, doc.document_id)
        report = DocumentIndexed(
            document_id=doc.document_id,
            organization_id=doc.organization_id,
            version=doc.version,
            chunks=0,
            embedded=False,
            deleted=True,
        )
        await stage_report(session, report, meta.tenant_id)
    return report
