"""API keys for service accounts and agents: created, listed and revoked from the CLI."""

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import select, update

from cortex_gateway.credentials import hash_api_key, new_api_key
from cortex_store.database import make_engine, make_sessionmaker
from cortex_store.models import ApiKey, MemberRole
from cortex_store.tenancy import org_transaction


@dataclass(frozen=True)
class KeyInfo:
    id: uuid.UUID
    name: str
    role: MemberRole
    created_at: datetime
    revoked_at: datetime | None


async def create_key(database_url: str, org_id: uuid.UUID, name: str, role: MemberRole) -> tuple[uuid.UUID, str]:
    """A new key; the key itself is shown once and only its hash is stored."""
    key, key_id = new_api_key(org_id), uuid.uuid4()
    engine = make_engine(database_url, pool_size=1)
    try:
        async with org_transaction(make_sessionmaker(engine), org_id) as session:
            session.add(ApiKey(id=key_id, organization_id=org_id, name=name, key_hash=hash_api_key(key), role=role))
    finally:
        await engine.dispose()
    return key_id, key


async def revoke_key(database_url: str, org_id: uuid.UUID, key_id: uuid.UUID) -> bool:
    engine = make_engine(database_url, pool_size=1)
    try:
        async with org_transaction(make_sessionmaker(engine), org_id) as session:
            result = await session.execute(
                update(ApiKey)
                .where(ApiKey.organization_id == org_id, ApiKey.id == key_id, ApiKey.revoked_at.is_(None))
                .values(revoked_at=datetime.now(UTC))
                .returning(ApiKey.id)
            )
            return result.first() is not None
    finally:
        await engine.dispose()


async def list_keys(database_url: str, org_id: uuid.UUID) -> list[KeyInfo]:
    engine = make_engine(database_url, pool_size=1)
    try:
        async with org_transaction(make_sessionmaker(engine), org_id) as session:
            rows = await session.execute(
                select(ApiKey.id, ApiKey.name, ApiKey.role, ApiKey.created_at, ApiKey.revoked_at)
                .where(ApiKey.organization_id == org_id)
                .order_by(ApiKey.created_at)
            )
            return [KeyInfo(r.id, r.name, r.role, r.created_at, r.revoked_at) for r in rows]
    finally:
        await engine.dispose()
