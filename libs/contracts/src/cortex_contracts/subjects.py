"""NATS subjects and stream names. Subjects carry the organization id in their second token."""

from uuid import UUID

STREAM_KB = "KB"
STREAM_MEMORY = "MEMORY"
STREAM_CORTEX = "CORTEX"
STREAM_DLQ = "DLQ"

STREAM_SUBJECTS: dict[str, list[str]] = {
    STREAM_KB: ["kb.>", "catalog.>"],
    STREAM_MEMORY: ["memory.>"],
    STREAM_CORTEX: ["cortex.>"],
    STREAM_DLQ: ["dlq.>"],
}

KB_ALL = "kb.>"
DOCUMENT_UPSERTED = "document.upserted"
DOCUMENT_DELETED = "document.deleted"
DOCUMENT_INDEXED = "document.indexed"

RPC_AGGREGATOR_FEED = "rpc.aggregator.feed"
RPC_AGGREGATOR_FACETS = "rpc.aggregator.facets"
RPC_AGGREGATOR_FACET_VALUES = "rpc.aggregator.facet_values"
RPC_AGGREGATOR_STATS = "rpc.aggregator.stats"
RPC_AGGREGATOR_ITEM = "rpc.aggregator.item"
RPC_AGGREGATOR_RECALL = "rpc.aggregator.recall"
RPC_AGGREGATOR_AGENT_MEMORIES = "rpc.aggregator.agent_memories"

MEMORY_ALL = "memory.>"  # all of it, so that an event on a subject no handler knows is dead-lettered, not left
ENTRY_REMEMBERED = "entry.remembered"

CATALOG_ALL = "catalog.>"
UPLOAD_CREATED = "upload.created"

DLQ_PREFIX = "dlq"


def kb_document_upserted(org_id: UUID) -> str:
    return f"kb.{org_id}.{DOCUMENT_UPSERTED}"


def kb_document_deleted(org_id: UUID) -> str:
    return f"kb.{org_id}.{DOCUMENT_DELETED}"


def kb_upload_created(org_id: UUID) -> str:
    return f"kb.{org_id}.{UPLOAD_CREATED}"


def cortex_document_indexed(org_id: UUID) -> str:
    return f"cortex.{org_id}.{DOCUMENT_INDEXED}"


def dead_letter(subject: str) -> str:
    return f"{DLQ_PREFIX}.{subject}"


def split_org_subject(subject: str) -> tuple[str, str, str]:
    """Split `domain.<orgId>.entity.action` into (domain, orgId, 'entity.action')."""
    domain, org_id, rest = subject.split(".", 2)
    return domain, org_id, rest


def memory_entry_remembered(org_id: UUID) -> str:
    return f"memory.{org_id}.{ENTRY_REMEMBERED}"
