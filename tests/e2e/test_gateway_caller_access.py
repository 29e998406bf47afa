"""The gateway's caller lookup: one statement (`cortex_caller_access`, migration 0011) on an autocommit
connection, as the application role, under row-level security.

It answers for live members and unrevoked keys of the organization the slug names, and for nothing
else; the organization it binds never outlives the call; a pooled connection the server closed is
replaced and the lookup tried again, through the gateway too.
"""

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import event, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from cortex_cli.api_keys import create_key, revoke_key
from cortex_gateway.access import APPLICATION_NAME, Access, caller_access, make_access_engine
from cortex_gateway.credentials import hash_api_key
from cortex_store.database import make_engine, make_sessionmaker
from cortex_store.models import MemberRole
from cortex_store.tenancy import org_transaction
from tests.backends import terminate_backends
from tests.conftest import OrgFactory
from tests.infrastructure import Infrastructure

pytestmark = pytest.mark.e2e


@pytest.fixture
async def access_engine(migrated: Infrastructure) -> AsyncIterator[AsyncEngine]:
    engine = make_access_engine(migrated.app_database_url, pool_size=1)
    yield engine
    await engine.dispose()


@pytest.fixture
async def owner(migrated: Infrastructure) -> AsyncIterator[AsyncEngine]:
    engine = make_engine(migrated.database_url, pool_size=1)
    yield engine
    await engine.dispose()


async def test_it_answers_for_live_members_and_keys_of_the_named_organization_only(
    make_org: OrgFactory, access_engine: AsyncEngine, owner: AsyncEngine, migrated: Infrastructure
) -> None:
    a, b = await make_org(), await make_org()
    admin, member = f"admin-{a.slug}", f"member-{a.slug}"
    key_id, key = await create_key(migrated.database_url, a.id, "agent", MemberRole.MEMBER)
    key_hash = hash_api_key(key)

    assert await caller_access(access_engine, a.slug, user_id=admin) == Access(a.id, None, MemberRole.ADMIN, None)
    assert await caller_access(access_engine, a.slug, user_id=member) == Access(a.id, None, MemberRole.MEMBER, None)
    assert await caller_access(access_engine, a.slug, key_hash=key_hash) == Access(
        a.id, None, MemberRole.MEMBER, key_id
    )
    # Nothing for another organization's slug, a stranger, an unknown slug, or a made-up key.
    assert await caller_access(access_engine, b.slug, user_id=admin) is None
    assert await caller_access(access_engine, b.slug, key_hash=key_hash) is None
    assert await caller_access(access_engine, a.slug, user_id=f"stranger-{uuid.uuid4().hex}") is None
    assert await caller_access(access_engine, f"nope-{uuid.uuid4().hex}", user_id=admin) is None
    assert await caller_access(access_engine, a.slug, key_hash=hash_api_key(f"cxk_{a.id.hex}_{'z' * 43}")) is None
    # A user id is not a key hash, nor the other way round.
    assert await caller_access(access_engine, a.slug, key_hash=admin) is None
    assert await caller_access(access_engine, a.slug, user_id=key_hash) is None

    # Revoked, removed, promoted: the very next lookup knows.
    assert await revoke_key(migrated.database_url, a.id, key_id)
    async with org_transaction(make_sessionmaker(owner), a.id) as session:
        await session.execute(
            text("UPDATE org_members SET deleted_at = now() WHERE organization_id = :org AND user_id = :user"),
            {"org": a.id, "user": admin},
        )
        await session.execute(
            text("UPDATE org_members SET role = 'admin' WHERE organization_id = :org AND user_id = :user"),
            {"org": a.id, "user": member},
        )
    assert await caller_access(access_engine, a.slug, key_hash=key_hash) is None
    assert await caller_access(access_engine, a.slug, user_id=admin) is None
    assert await caller_access(access_engine, a.slug, user_id=member) == Access(a.id, None, MemberRole.ADMIN, None)


async def test_it_needs_exactly_one_credential(make_org: OrgFactory, access_engine: AsyncEngine) -> None:
    a = await make_org()
    with pytest.raises(ValueError, match="exactly one"):
        await caller_access(access_engine, a.slug)
    async with access_engine.connect() as connection:
        for user_id, key_hash in ((None, None), (f"admin-{a.slug}", "0" * 64)):
            with pytest.raises(DBAPIError, match="exactly one"):
                await connection.execute(
                    text("SELECT * FROM cortex_caller_access(:slug, :user_id, :key_hash)"),
                    {"slug": a.slug, "user_id": user_id, "key_hash": key_hash},
                )


async def test_the_organization_it_binds_never_outlives_the_call(
    make_org: OrgFactory, access_engine: AsyncEngine, migrated: Infrastructure
) -> None:
    a, b = await make_org(), await make_org()
    setting = text("SELECT current_setting('cortex.organization_id', true)")
    members = text("SELECT DISTINCT organization_id FROM org_members")
    call_for_a = text("SELECT organization_id FROM cortex_caller_access(:slug, :user, NULL)")
    a_member = {"slug": a.slug, "user": f"member-{a.slug}"}

    # Autocommit, as the gateway calls it: afterwards no organization is bound, so no member is visible.
    async with access_engine.connect() as connection:
        assert (await connection.execute(call_for_a, a_member)).scalar_one() == a.id
        assert (await connection.scalar(setting)) in (None, "")
        assert (await connection.execute(members)).all() == []

    # Inside a transaction bound to B: the call for A leaves B bound, and only B's rows visible.
    app = make_engine(migrated.app_database_url, pool_size=1)
    try:
        async with org_transaction(make_sessionmaker(app), b.id) as session:
            assert (await session.execute(call_for_a, a_member)).scalar_one() == a.id
            assert await session.scalar(setting) == str(b.id)
            assert (await session.execute(members)).scalars().all() == [b.id]
    finally:
        await app.dispose()


async def test_a_lookup_is_one_statement_outside_any_transaction(
    make_org: OrgFactory, access_engine: AsyncEngine
) -> None:
    a = await make_org()
    sent: list[tuple[str, bool]] = []

    def record(connection: Any, cursor: Any, statement: str, *_: Any) -> None:
        sent.append((statement, connection.connection.driver_connection.is_in_transaction()))

    event.listen(access_engine.sync_engine, "before_cursor_execute", record)
    try:
        for _ in range(3):
            assert await caller_access(access_engine, a.slug, user_id=f"member-{a.slug}") is not None
    finally:
        event.remove(access_engine.sync_engine, "before_cursor_execute", record)

    assert len(sent) == 3
    for statement, in_transaction in sent:
        assert "cortex_caller_access(" in statement
        assert not in_transaction  # no BEGIN was sent before it, nor a COMMIT needed after


async def test_a_pooled_connection_the_server_closed_is_replaced_and_the_lookup_tried_again(
    make_org: OrgFactory, access_engine: AsyncEngine, owner: AsyncEngine
) -> None:
    a = await make_org()
    user = f"member-{a.slug}"
    async with access_engine.connect() as connection:  # the one pooled connection
        before = await connection.scalar(text("SELECT pg_backend_pid()"))
    invalidated: list[BaseException | None] = []
    event.listen(access_engine.sync_engine.pool, "invalidate", lambda _c, _r, exc: invalidated.append(exc))

    assert await terminate_backends(owner, APPLICATION_NAME) >= 1

    assert await caller_access(access_engine, a.slug, user_id=user) == Access(a.id, None, MemberRole.MEMBER, None)
    assert len(invalidated) == 1  # the stale connection was used, failed, and was dropped
    async with access_engine.connect() as connection:
        assert await connection.scalar(text("SELECT pg_backend_pid()")) != before


async def test_through_the_gateway_requests_go_on_after_the_server_closed_its_lookup_connections(
    make_org: OrgFactory, owner: AsyncEngine
) -> None:
    a = await make_org()
    assert (await a.member.get("/api/memory/stats")).status_code == 200  # the gateway's pool has a connection

    assert await terminate_backends(owner, APPLICATION_NAME) >= 1

    for client in (a.member, a.admin, a.member):
        response = await client.get("/api/memory/stats")
        assert response.status_code == 200, response.text
