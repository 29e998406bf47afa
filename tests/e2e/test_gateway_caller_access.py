"""The gateway's caller lookup: one statement (`cortex_caller_access`, migrations 0011 and 0018) on an
autocommit connection of its own asyncpg pool, as the application role, under row-level security.

It lets in live members and unrevoked keys of the organization the slug names, and no one else (for
them it names the organization but no role: the gateway tells a bad key from a stranger); the
organization it binds never outlives the call; a pooled connection the server closed is replaced and
the lookup tried again, through the gateway too; a server that cannot be reached is a 503.
"""

import asyncio
import contextlib
import json
import os
import signal
import socket
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from cortex_cli.api_keys import create_key, revoke_key
from cortex_contracts import subjects
from cortex_embedded_servers import EmbeddedNats, free_port
from cortex_gateway import access as access_module
from cortex_gateway.access import (
    APPLICATION_NAME,
    CALLER_ACCESS,
    Access,
    DatabaseUnreachable,
    caller_access,
    make_access_pool,
)
from cortex_gateway.credentials import hash_api_key
from cortex_gateway.tokens import issue_token
from cortex_messaging.connection import connect, disconnect
from cortex_store.database import make_engine, make_sessionmaker
from cortex_store.models import MemberRole
from cortex_store.tenancy import org_transaction
from tests.backends import terminate_backends
from tests.conftest import OrgFactory
from tests.gateways import running_gateway
from tests.infrastructure import Infrastructure
from tests.services import SECRET

pytestmark = pytest.mark.e2e


@pytest.fixture
async def access_pool(migrated: Infrastructure) -> AsyncIterator[asyncpg.Pool]:
    async with make_access_pool(migrated.app_database_url, size=1) as pool:
        yield pool


async def test_it_answers_for_live_members_and_keys_of_the_named_organization_only(
    make_org: OrgFactory, access_pool: asyncpg.Pool, owner: AsyncEngine, migrated: Infrastructure
) -> None:
    a, b = await make_org(), await make_org()
    admin, member = f"admin-{a.slug}", f"member-{a.slug}"
    key_id, key = await create_key(migrated.database_url, a.id, "agent", MemberRole.MEMBER)
    key_hash = hash_api_key(key)

    assert await caller_access(access_pool, a.slug, user_id=admin) == Access(a.id, None, MemberRole.ADMIN, None)
    assert await caller_access(access_pool, a.slug, user_id=member) == Access(a.id, None, MemberRole.MEMBER, None)
    assert await caller_access(access_pool, a.slug, key_hash=key_hash) == Access(a.id, None, MemberRole.MEMBER, key_id)
    # Nothing for an unknown slug; no role for another organization's slug, a stranger, or a made-up key.
    assert await caller_access(access_pool, f"nope-{uuid.uuid4().hex}", user_id=admin) is None
    outside_a, outside_b = Access(a.id, None, None, None), Access(b.id, None, None, None)
    assert await caller_access(access_pool, b.slug, user_id=admin) == outside_b
    assert await caller_access(access_pool, b.slug, key_hash=key_hash) == outside_b
    assert await caller_access(access_pool, a.slug, user_id=f"stranger-{uuid.uuid4().hex}") == outside_a
    assert await caller_access(access_pool, a.slug, key_hash=hash_api_key(f"cxk_{a.id.hex}_{'z' * 43}")) == outside_a
    # A user id is not a key hash, nor the other way round.
    assert await caller_access(access_pool, a.slug, key_hash=admin) == outside_a
    assert await caller_access(access_pool, a.slug, user_id=key_hash) == outside_a

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
    assert await caller_access(access_pool, a.slug, key_hash=key_hash) == outside_a
    assert await caller_access(access_pool, a.slug, user_id=admin) == outside_a
    assert await caller_access(access_pool, a.slug, user_id=member) == Access(a.id, None, MemberRole.ADMIN, None)


async def test_it_needs_exactly_one_credential(make_org: OrgFactory, access_pool: asyncpg.Pool) -> None:
    a = await make_org()
    with pytest.raises(ValueError, match="exactly one"):
        await caller_access(access_pool, a.slug)
    async with access_pool.acquire() as connection:
        for user_id, key_hash in ((None, None), (f"admin-{a.slug}", "0" * 64)):
            with pytest.raises(asyncpg.PostgresError, match="exactly one"):
                await connection.fetch("SELECT * FROM cortex_caller_access($1, $2, $3)", a.slug, user_id, key_hash)


async def test_the_organization_it_binds_never_outlives_the_call(
    make_org: OrgFactory, access_pool: asyncpg.Pool, migrated: Infrastructure
) -> None:
    a, b = await make_org(), await make_org()
    setting = text("SELECT current_setting('cortex.organization_id', true)")
    members = text("SELECT DISTINCT organization_id FROM org_members")
    call_for_a = text("SELECT organization_id FROM cortex_caller_access(:slug, :user, NULL)")
    a_member = {"slug": a.slug, "user": f"member-{a.slug}"}

    # Autocommit, as the gateway calls it: afterwards no organization is bound, so no member is visible.
    async with access_pool.acquire() as connection:
        call = "SELECT organization_id FROM cortex_caller_access($1, $2, NULL)"
        assert await connection.fetchval(call, a.slug, f"member-{a.slug}") == a.id
        assert await connection.fetchval(str(setting)) in (None, "")
        assert await connection.fetch(str(members)) == []

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
    make_org: OrgFactory, access_pool: asyncpg.Pool
) -> None:
    a = await make_org()
    await caller_access(access_pool, a.slug, user_id=f"member-{a.slug}")  # (asyncpg learns the types once)
    sent: list[str] = []
    async with access_pool.acquire() as connection:  # the one pooled connection: every statement it is sent
        connection.add_query_logger(lambda query: sent.append(query.query))
    for _ in range(3):
        assert await caller_access(access_pool, a.slug, user_id=f"member-{a.slug}") is not None
    await asyncio.sleep(0)  # (asyncpg calls its query loggers soon after, not at once)

    # The call alone, three times: no BEGIN before it, no COMMIT after, no reset as the connection went back.
    assert sent == [CALLER_ACCESS] * 3


async def test_a_pooled_connection_the_server_closed_is_replaced_and_the_lookup_tried_again(
    make_org: OrgFactory, access_pool: asyncpg.Pool, owner: AsyncEngine
) -> None:
    a = await make_org()
    user = f"member-{a.slug}"
    async with access_pool.acquire() as connection:  # the one pooled connection
        before = await connection.fetchval("SELECT pg_backend_pid()")

    assert await terminate_backends(owner, APPLICATION_NAME) >= 1

    assert await caller_access(access_pool, a.slug, user_id=user) == Access(a.id, None, MemberRole.MEMBER, None)
    async with access_pool.acquire() as connection:
        assert await connection.fetchval("SELECT pg_backend_pid()") != before


class _Lost:
    """A pooled connection the server closed before asyncpg noticed: its next statement fails."""

    async def fetchrow(self, *_: Any) -> None:
        raise asyncpg.ConnectionDoesNotExistError("connection was closed in the middle of operation")


class _PoolHandingOutOneLostConnection:
    def __init__(self, real: asyncpg.Pool) -> None:
        self.real, self.lost_handed_out = real, False

    def acquire(self) -> Any:
        if self.lost_handed_out:
            return self.real.acquire()
        self.lost_handed_out = True
        return contextlib.nullcontext(_Lost())


async def test_a_lookup_whose_connection_fails_as_closed_is_tried_once_more(
    make_org: OrgFactory, access_pool: asyncpg.Pool
) -> None:
    a = await make_org()
    pool = _PoolHandingOutOneLostConnection(access_pool)
    access = await caller_access(pool, a.slug, user_id=f"member-{a.slug}")
    assert pool.lost_handed_out
    assert access == Access(a.id, None, MemberRole.MEMBER, None)


async def test_a_database_that_cannot_be_reached_is_a_503_with_retry_after(migrated: Infrastructure) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        nowhere = f"postgresql://cortex_app@127.0.0.1:{probe.getsockname()[1]}/cortex"
    async with make_access_pool(nowhere, size=1) as pool:
        with pytest.raises(DatabaseUnreachable, match="Connect"):
            await caller_access(pool, "acme", user_id="alice")

    headers = {"Authorization": f"Bearer {issue_token('alice', SECRET)}", "X-Scope-Slug": "acme"}
    async with running_gateway(migrated, database_url=nowhere) as base_url, httpx.AsyncClient() as client:
        response = await client.get(f"{base_url}/api/memory", params={"q": "pricing"}, headers=headers)
    assert response.status_code == 503
    assert response.headers["content-type"] == "application/problem+json"
    assert response.headers["retry-after"] == "5"
    assert response.json()["detail"] == "The database is not reachable."


async def test_a_database_that_does_not_answer_is_unreachable_after_the_lookups_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A server that takes the connection and says nothing (stopped, or its host gone without a reset). Before
    (QA 46), every request waited as long as the outage lasted: 150 s for a 150 s freeze."""
    monkeypatch.setattr(access_module, "LOOKUP_SECONDS", 0.5)

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # until the client gives up

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with make_access_pool(f"postgresql://cortex_app@127.0.0.1:{port}/cortex", size=1) as pool:
            async with asyncio.timeout(5):
                with pytest.raises(DatabaseUnreachable, match="TimeoutError"):
                    await caller_access(pool, "acme", user_id="alice")
    finally:
        server.close()


async def test_a_database_still_starting_up_is_unreachable(monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLSTATE 57P03 while PostgreSQL restarts: before (QA 46), a 500 with a traceback in the gateway's log."""

    async def starting(*args: Any) -> Any:
        raise asyncpg.CannotConnectNowError("the database system is starting up")

    monkeypatch.setattr(access_module, "_lookup", starting)
    with pytest.raises(DatabaseUnreachable, match="starting up"):
        await caller_access(None, "acme", user_id="alice")  # the lookup is replaced: no pool needed


async def test_through_the_gateway_requests_go_on_after_the_server_closed_its_lookup_connections(
    make_org: OrgFactory, owner: AsyncEngine
) -> None:
    a = await make_org()
    assert (await a.member.get("/api/memory/stats")).status_code == 200  # the gateway's pool has a connection

    assert await terminate_backends(owner, APPLICATION_NAME) >= 1

    for client in (a.member, a.admin, a.member):
        response = await client.get("/api/memory/stats")
        assert response.status_code == 200, response.text


async def test_an_event_bus_that_went_away_is_a_503_with_retry_after(
    make_org: OrgFactory, migrated: Infrastructure, tmp_path: Path
) -> None:
    """A gateway whose NATS stopped: publishing a note, or asking the aggregator, is a 503 at once."""
    org = await make_org()
    nats = EmbeddedNats(tmp_path / "nats", port=free_port("127.0.0.1"))
    nats_url = nats.start()
    try:
        async with running_gateway(migrated, nats_url=nats_url) as base_url, httpx.AsyncClient(timeout=30) as client:
            nats.stop()
            headers = {"Authorization": org.admin.headers["Authorization"], "X-Scope-Slug": org.slug}
            note = await client.post(
                f"{base_url}/api/memory/documents", json={"title": "Into the void"}, headers=headers
            )
            # A question for the aggregator, while the client reconnects: before, it waited 5 s for a 504.
            stats = await client.get(f"{base_url}/api/memory/stats", headers=headers)
    finally:
        nats.stop()
    for response in (note, stats):
        assert response.status_code == 503, response.text
        assert response.headers["content-type"] == "application/problem+json"
        assert response.headers["retry-after"] == "5"
        assert response.json()["detail"] == "The event bus is not reachable; try again."


async def test_a_nats_that_holds_its_connections_but_answers_nothing_is_not_ready(
    migrated: Infrastructure, tmp_path: Path
) -> None:
    """Before (QA 46), /readyz said NATS was ready while every read waited 5 s for a 504 and every write 503'd:
    it looked only at whether the client was connected."""
    nats = EmbeddedNats(tmp_path / "nats", port=free_port("127.0.0.1"))
    nats_url = nats.start()
    pid = int((tmp_path / "nats" / "nats.pid").read_text().split()[0])
    try:
        async with running_gateway(migrated, nats_url=nats_url) as base_url, httpx.AsyncClient(timeout=30) as client:
            assert (await client.get(f"{base_url}/readyz")).status_code == 200
            os.kill(pid, signal.SIGSTOP)
            try:
                frozen = await client.get(f"{base_url}/readyz")
            finally:
                os.kill(pid, signal.SIGCONT)
    finally:
        nats.stop()
    assert frozen.status_code == 503
    assert frozen.json()["checks"] == {"nats": False, "postgres": True}


async def test_a_note_whose_publish_was_not_confirmed_is_named_as_perhaps_stored(
    migrated: Infrastructure, make_org: OrgFactory, tmp_path: Path
) -> None:
    """NATS froze while the note's event was on its way: the 503 gives the note's id and says that it may be
    stored, since it was. Before (QA 46): "try again", and a retry (a new id) added the note twice."""
    org = await make_org()
    nats = EmbeddedNats(tmp_path / "nats", port=free_port("127.0.0.1"))
    nats_url = nats.start()
    pid = int((tmp_path / "nats" / "nats.pid").read_text().split()[0])
    try:
        async with running_gateway(migrated, nats_url=nats_url) as base_url, httpx.AsyncClient(timeout=30) as client:
            headers = {"Authorization": org.admin.headers["Authorization"], "X-Scope-Slug": org.slug}
            os.kill(pid, signal.SIGSTOP)
            try:
                note = await client.post(f"{base_url}/api/memory/documents", json={"title": "Frozen"}, headers=headers)
            finally:
                os.kill(pid, signal.SIGCONT)
        nc = await connect(nats_url, name="test-reader")
        try:
            js = nc.jetstream()
            stream = await js.find_stream_name_by_subject(subjects.kb_document_upserted(org.id))
            stored = await js.get_last_msg(stream, subjects.kb_document_upserted(org.id))
        finally:
            await disconnect(nc)
    finally:
        nats.stop()
    assert (note.status_code, note.headers["retry-after"]) == (503, "5"), note.text
    assert note.json()["detail"].startswith(f"NATS did not confirm note {note.json()['id']} in time: it may have")
    assert json.loads(stored.data or b"{}")["data"]["documentId"] == note.json()["id"]
