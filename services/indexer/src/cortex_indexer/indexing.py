"""Index and delete documents: the indexer's work, independent of where the event came from.

Each function's writes are one transaction, which stages the `document.indexed` report in the outbox;
the report is sent once that transaction has committed.
"""

import hashlib
import logging
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import asyncpg
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cortex_contracts.documents import DocumentDeleted, DocumentIndexed, DocumentUpserted
from cortex_contracts.uploads import UploadCreated
from cortex_contracts.vector_store import VectorStore
from cortex_embedding.errors import EmbeddingError
from cortex_indexer import embedding_space, repository
from cortex_indexer.chunking import Chunk, document_passages
from cortex_indexer.embedding_space import EmbeddingSpace
from cortex_indexer.outbox import OutboxRelay, stage
from cortex_indexer.reports import report_message
from cortex_indexer.vector_mirror import mirror_or_defer
from cortex_messaging.delivery import CLOCK_SKEW, EARLIEST, PoisonMessage, as_utc
from cortex_store.database import autocommit_connection, driver_connection
from cortex_store.tenancy import bind_organization, org_transaction

log = logging.getLogger(__name__)

EmbedFn = Callable[[list[str]], Awaitable[list[list[float]]]]
FAILED = "failed"  # status of a document whose file could not be read
# The database functions' refusals (migration 0013), by SQLSTATE.
UNKNOWN_ORGANIZATION = "CXORG"
OTHER_ORGANIZATIONS_DOCUMENT = "CXOWN"
OTHER_EMBEDDING_SPACE = "CXSPC"


class UnknownOrganization(Exception):
    """Retried: the organization may be created moments later (catalog events race KB events)."""

    def __init__(self, organization_id: uuid.UUID) -> None:
        super().__init__(f"no organization {organization_id} (yet)")


@dataclass(frozen=True)
class IndexingContext:
    sessions: async_sessionmaker[AsyncSession]
    embed: EmbedFn | None  # None: lexical-only
    consumer: str
    space: EmbeddingSpace | None = None  # the embedder's space; embeddings are written only while it is active
    vectors: VectorStore | None = None  # a store of its own (Qdrant) mirrored in the same transaction; None: pgvector
    relay: OutboxRelay | None = None  # sends each report once its transaction committed; None: the sweep does


@dataclass(frozen=True)
class EventMeta:
    inbox_key: str  # the event as the inbox records it: repository.inbox_key
    organization_id: uuid.UUID
    tenant_id: str | None
    time: datetime


def _check_owner(stored: repository.StoredVersion | None, organization_id: uuid.UUID) -> None:
    if stored is not None and stored.organization_id != organization_id:
        raise PoisonMessage("document id already belongs to another organization")


@contextmanager
def _refusals(organization_id: uuid.UUID) -> Iterator[None]:
    """The database functions' refusals (migration 0013) as the consumer's outcomes."""
    try:
        yield
    except asyncpg.PostgresError as exc:
        if exc.sqlstate == UNKNOWN_ORGANIZATION:
            raise UnknownOrganization(organization_id) from exc
        if exc.sqlstate == OTHER_ORGANIZATIONS_DOCUMENT:
            raise PoisonMessage(str(exc)) from exc
        raise


@dataclass(frozen=True)
class Claim:
    applies: bool  # False: the event was handled before, or a newer version (or this deletion) is stored
    stored: repository.StoredVersion | None


def deletion_applies(stored: repository.StoredVersion | None, version: int) -> bool:
    """A deletion wins ties: it removes the version it names (upstream deletes a document at the version it
    has), and an upsert of a deleted version is stale (`cortex_index_document`, migration 0024)."""
    return stored is None or stored.version < version or (stored.version == version and not stored.deleted)


async def _claim_deletion(
    session: AsyncSession,
    ctx: IndexingContext,
    meta: EventMeta,
    document_id: uuid.UUID,
    version: int,
) -> Claim:
    """In the deletion's transaction: record the event, lock the document row, compare versions."""
    await bind_organization(session, meta.organization_id)
    if not await repository.claim_event(session, ctx.consumer, meta.inbox_key):
        return Claim(applies=False, stored=None)
    if not await repository.organization_exists(session, meta.organization_id):
        raise UnknownOrganization(meta.organization_id)
    stored = await repository.stored_version(session, document_id, lock=True)
    _check_owner(stored, meta.organization_id)
    return Claim(applies=deletion_applies(stored, version), stored=stored)


async def prior_embeddings(
    ctx: IndexingContext, meta: EventMeta, document_id: uuid.UUID, version: int
) -> dict[str, list[float]] | None:
    """None when the event is stale (a duplicate, or not newer than what is stored): a cheap read before
    the expensive part. Else the stored document's embeddings by passage hash, for the passages an edit
    left unchanged. One statement."""
    async with autocommit_connection(ctx.sessions) as connection:
        with _refusals(meta.organization_id):
            return await repository.document_prior(
                connection,
                ctx.consumer,
                meta.inbox_key,
                meta.organization_id,
                document_id,
                version,
            )


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


def check_moment(name: str, moment: datetime | None, event_time: datetime) -> None:
    """A document or entry cannot change after the event that reports the change (but for the clocks of a KB
    service and of its publisher differing a little: year 9999 would top the newest-first feed), nor before
    1970."""
    if moment is None:
        return
    if as_utc(moment) - as_utc(event_time) > CLOCK_SKEW:
        raise PoisonMessage(
            f"{name} {moment.isoformat()} is after the event's time {event_time.isoformat()} "
            f"(by more than {CLOCK_SKEW})"
        )
    if as_utc(moment) < EARLIEST:
        raise PoisonMessage(f"{name} {moment.isoformat()} is before {EARLIEST.isoformat()}")


async def index_document(
    ctx: IndexingContext,
    meta: EventMeta,
    doc: DocumentUpserted,
    body: str,
    *,
    upload: UploadCreated | None = None,
    failure_reason: str | None = None,
    known: dict[str, list[float]] | None = None,
) -> DocumentIndexed | None:
    """Store the document and its passages unless a newer version is already stored.

    `upload` is the file the document was extracted from, recorded in the same transaction; its name is a
    passage too. With a `failure_reason` the document is stored as failed, that passage its only one: the
    file is found by its name and title, listed as failed (its detail says why).
    `known`: what `prior_embeddings` returned for this event, when the caller has read it already.
    """
    if doc.organization_id != meta.organization_id:
        raise PoisonMessage("payload organizationId differs from the event's orgid")
    check_moment("updatedAt", doc.updated_at, meta.time)
    if known is None:
        known = await prior_embeddings(ctx, meta, doc.document_id, doc.version)
    if known is None:
        return None
    chunks = document_passages(
        doc.title, None if failure_reason else body, filename=upload.filename if upload is not None else None
    )
    embeddings = await _embed_changed(ctx, doc.document_id, chunks, known)
    try:
        return await _write(ctx, meta, doc, body, chunks, embeddings, upload, failure_reason)
    except asyncpg.PostgresError as exc:
        if exc.sqlstate != OTHER_EMBEDDING_SPACE or ctx.space is None:
            raise
        embedding_space.superseded(ctx.space)  # another copy moved the index to another model meanwhile
        return await _write(ctx, meta, doc, body, chunks, None, upload, failure_reason)


async def _write(
    ctx: IndexingContext,
    meta: EventMeta,
    doc: DocumentUpserted,
    body: str,
    chunks: list[Chunk],
    embeddings: Embeddings | None,
    upload: UploadCreated | None,
    failure_reason: str | None,
) -> DocumentIndexed | None:
    """One call of `cortex_index_document` (migration 0013); with a vector store of its own, in a transaction
    that mirrors the passages there too (or marks them for the backfill to mirror). The report goes out once
    it has committed."""
    embedded = fully_embedded(embeddings)
    report = DocumentIndexed(
        document_id=doc.document_id,
        organization_id=doc.organization_id,
        version=doc.version,
        chunks=len(chunks),
        embedded=embedded,
        failure_reason=failure_reason,
    )
    write = repository.DocumentWrite(
        consumer=ctx.consumer,
        event_id=meta.inbox_key,
        document={
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
            "embedded": embedded,
            "updated_at": (doc.updated_at or meta.time).isoformat(),
            "last_indexed_at": datetime.now(UTC).isoformat(),
        },
        passages=[
            repository.Passage(
                chunk.heading,
                chunk.text,
                chunk.content_hash,
                embeddings[chunk.ordinal] if embeddings is not None else None,
            )
            for chunk in chunks
        ],
        cites=doc.cites,
        upload=None if upload is None else _upload_row(upload),
        model=ctx.space.model if embeddings is not None and ctx.space is not None else None,
        report=report_message(report, meta.tenant_id),
    )
    if ctx.vectors is None:  # pgvector: the passages' own rows are the store; the call is the whole transaction
        async with autocommit_connection(ctx.sessions) as connection:
            with _refusals(doc.organization_id):
                written = await repository.write_document(connection, write)
    else:
        async with org_transaction(ctx.sessions, doc.organization_id) as session:
            with _refusals(doc.organization_id):
                written = await repository.write_document(await driver_connection(session), write)
            if written:
                await mirror_or_defer(session, ctx.vectors, doc.document_id)
    if not written:
        return None
    if ctx.relay is not None:
        await ctx.relay.send(write.report)
    return report


def _upload_row(upload: UploadCreated) -> dict[str, Any]:
    return {
        "id": upload.upload_id,
        "organization_id": upload.organization_id,
        "work_id": upload.work_id,
        "filename": upload.filename,
        "media_type": upload.media_type,
        "size_bytes": upload.size_bytes,
        "object_bucket": upload.object.bucket if upload.object else None,
        "object_name": upload.object.name if upload.object else None,
    }


async def delete_document(ctx: IndexingContext, meta: EventMeta, doc: DocumentDeleted) -> DocumentIndexed | None:
    if doc.organization_id != meta.organization_id:
        raise PoisonMessage("payload organizationId differs from the event's orgid")
    async with ctx.sessions() as session, session.begin():
        claim = await _claim_deletion(session, ctx, meta, doc.document_id, doc.version)
        if not claim.applies:
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
            await mirror_or_defer(session, ctx.vectors, doc.document_id)
        report = DocumentIndexed(
            document_id=doc.document_id,
            organization_id=doc.organization_id,
            version=doc.version,
            chunks=0,
            embedded=False,
            deleted=True,
        )
        message = report_message(report, meta.tenant_id)
        await stage(session, message)
    if ctx.relay is not None:
        await ctx.relay.send(message)
    return report
