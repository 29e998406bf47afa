"""Store remembered memory entries: embedded (or backfilled when the embedder was down), deduplicated by id
(the id derives from scope + content: an event may leave it out, and one naming another is refused)."""

import hashlib
import json
import logging
from collections.abc import Awaitable, Callable

from pydantic import ValidationError
from sqlalchemy import text

from cortex_contracts import subjects
from cortex_contracts.memory import EntryRemembered
from cortex_embedding.errors import EmbeddingError
from cortex_indexer import embedding_space, repository
from cortex_indexer.indexing import IndexingContext, UnknownOrganization, check_moment
from cortex_indexer.tenant_guard import refuse_cross_tenant_writes
from cortex_messaging.delivery import Delivery, PoisonMessage, brief
from cortex_store.tenancy import bind_organization
from cortex_store.vector_text import vector_literal

log = logging.getLogger(__name__)


INSERT_ENTRY = text("""
INSERT INTO memory_entry (id, organization_id, tenant_id, partition, tier, work_id, memory_session_id, agent_id,
                          agent_run_id, content, content_hash, metadata, created_at, updated_at, embedding,
                          embedding_input)
VALUES (:id, :org, :tenant, CAST(:partition AS memory_partition), CAST(:tier AS memory_tier), :work, :session,
        :agent, :run, :content, :hash, CAST(:metadata AS json), :at, :at, CAST(:embedding AS vector), :embedding_input)
ON CONFLICT (organization_id, id) DO NOTHING
RETURNING id
""")
# BM25 needs each entry's length in the lexemes PostgreSQL's text analysis produced.
COUNT_TOKENS = text("""
UPDATE memory_entry m SET token_count = coalesce((SELECT sum(array_length(u.positions, 1)) FROM unnest(m.tsv) u), 0)
WHERE m.organization_id = :org AND m.id = :id
""")


def embedding_input(entry: EntryRemembered) -> str:
    return entry.content


def _vector(values: list[float] | None) -> str | None:
    return None if values is None else vector_literal(values)


async def _embed(ctx: IndexingContext, source_text: str) -> list[float] | None:
    """The entry's embedding; None (stored lexical-only, backfilled later) when the embedder fails."""
    if ctx.embed is None or (ctx.space is not None and not ctx.space.writable):
        return None
    try:
        return (await ctx.embed([source_text]))[0]
    except EmbeddingError as exc:
        log.warning("memory entry stored without its embedding (backfilled later): %s", exc)
        return None


def make_memory_handler(ctx: IndexingContext) -> Callable[[Delivery], Awaitable[None]]:
    @refuse_cross_tenant_writes
    async def handle(delivery: Delivery) -> None:
        if delivery.action != subjects.ENTRY_REMEMBERED:
            raise PoisonMessage(f"unknown event {delivery.action!r} on {delivery.subject}")
        try:
            entry = EntryRemembered.from_wire(delivery.event.data)
        except ValidationError as exc:
            raise PoisonMessage(f"invalid {delivery.event.type} payload: {brief(exc)}") from exc
        if entry.organization_id != delivery.event.orgid:
            raise PoisonMessage("payload organizationId differs from the event's orgid")
        check_moment("rememberedAt", entry.remembered_at, delivery.event.time)
        metadata = json.dumps(entry.metadata) if entry.metadata is not None else None
        source_text = embedding_input(entry)
        content_hash = hashlib.sha256(entry.content.encode()).hexdigest()
        vector = await _embed(ctx, source_text)
        async with ctx.sessions() as session, session.begin():
            if vector is not None and ctx.space is not None and not await embedding_space.holds(session, ctx.space):
                vector = None  # the index moved to another model meanwhile
            await bind_organization(session, entry.organization_id)
            inbox_key = repository.inbox_key(delivery.event.orgid, delivery.event.id)
            if not await repository.claim_event(session, ctx.consumer, inbox_key):
                return
            if not await repository.organization_exists(session, entry.organization_id):
                raise UnknownOrganization(entry.organization_id)
            inserted = await session.execute(
                INSERT_ENTRY,
                {
                    "id": entry.id,
                    "org": entry.organization_id,
                    "tenant": delivery.event.tenantid,
                    "partition": entry.partition.value,
                    "tier": entry.tier.value,
                    "work": entry.work_id,
                    "session": entry.memory_session_id,
                    "agent": entry.agent_id,
                    "run": entry.agent_run_id,
                    "content": entry.content,
                    "hash": content_hash,
                    "metadata": metadata,
                    "at": entry.remembered_at or delivery.event.time,
                    "embedding": _vector(vector),
                    "embedding_input": source_text,
                },
            )
            if inserted.first() is not None:  # else the same memory, stored already
                await session.execute(COUNT_TOKENS, {"org": entry.organization_id, "id": entry.id})
        log.info("remembered entry %s", entry.id)

    return handle
