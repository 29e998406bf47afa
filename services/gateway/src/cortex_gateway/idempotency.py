"""`Idempotency-Key` (draft-ietf-httpapi-idempotency-key-header): a key stands for its first request.

The same key with the same request names the same document, so a retry creates nothing new; the same
key with a different request is refused with 422, as the draft asks, because answering it with the
first request's document would silently drop what the caller sent the second time.
"""

import hashlib
import json
import uuid
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cortex_gateway.problems import Problem
from cortex_store.models import IdempotencyKey
from cortex_store.tenancy import org_transaction

# A key's document id is derived from the key, as it was before keys were stored (migration 0016): a retry
# that spans the upgrade still names the note its first request made.
KEY_NAMESPACE = uuid.UUID("0b7e4a52-8f5c-4e0a-9a53-2c4d7f1e6b90")


def _request_sha256(request: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(request, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


async def document_for_key(
    sessions: async_sessionmaker[AsyncSession],
    organization_id: uuid.UUID,
    principal: str,
    key: str,
    request: dict[str, Any],
) -> uuid.UUID:
    """The document `key` stands for, on its first use and on every retry of that request."""
    fingerprint = _request_sha256(request)
    async with org_transaction(sessions, organization_id) as session:
        # A concurrent first use of the key waits here for the other's commit, then finds its row below.
        await session.execute(
            insert(IdempotencyKey)
            .values(
                organization_id=organization_id,
                principal=principal,
                key=key,
                request_sha256=fingerprint,
                document_id=uuid.uuid5(KEY_NAMESPACE, f"{organization_id}:{principal}:{key}"),
            )
            .on_conflict_do_nothing()
        )
        first = await session.scalar(
            select(IdempotencyKey).where(
                IdempotencyKey.organization_id == organization_id,
                IdempotencyKey.principal == principal,
                IdempotencyKey.key == key,
            )
        )
    assert first is not None, "the insert above or a concurrent one made this row"
    if first.request_sha256 != fingerprint:
        raise Problem(
            422,
            "This Idempotency-Key was first used with a different request; send a new key for a new request.",
        )
    return first.document_id
