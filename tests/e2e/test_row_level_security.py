"""Row-level security, tested on PostgreSQL itself as the role the services connect with.

Two organizations' rows are written by the owner (each bound to its organization). Then, as
`cortex_app`: no organization set → no rows at all; one organization set → exactly its rows; writing
another organization's row is refused; and 1,000 interleaved transactions of both organizations over a
2-connection pool each see only their own rows.
"""

import asyncio
import random
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from cortex_store.database import make_engine, make_sessionmaker
from cortex_store.tenancy import bind_organization, org_transaction
from tests.infrastructure import Infrastructure

pytestmark = pytest.mark.e2e

# The tables the issue names first, then the rest of the organization's data.
TABLES = (
    "kb_documents",
    "kb_chunks",
    "works",
    "org_members",
    "api_keys",
    "missions",
    "teams",
    "team_resources",
    "kb_uploads",
    "kb_citations",
)


@dataclass
class SeededOrg:
    id: uuid.UUID
    documents: list[uuid.UUID] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)


async def _seed(session: AsyncSession, documents: int) -> SeededOrg:
    """One organization's rows in every tenant table (the session is bound to it)."""
    org = SeededOrg(uuid.uuid4())
    await bind_organization(session, org.id)
    params = {"org": org.id}
    await session.execute(
        text("INSERT INTO organizations (id, slug, name) VALUES (:org, :slug, 'RLS test')"),
        {**params, "slug": f"rls-{org.id.hex[:12]}"},
    )
    for user in ("admin", "member"):
        await session.execute(
            text("INSERT INTO org_members (organization_id, user_id, role) VALUES (:org, :user, 'member')"),
            {**params, "user": f"{user}-{org.id}"},
        )
    mission, team, work = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    await session.execute(
        text("INSERT INTO missions (id, organization_id, title) VALUES (:id, :org, 'M')"), {**params, "id": mission}
    )
    await session.execute(
        text("INSERT INTO teams (id, organization_id, name) VALUES (:id, :org, 'T')"), {**params, "id": team}
    )
    for work_id in (work, uuid.uuid4()):
        await session.execute(
            text("INSERT INTO works (id, organization_id, title, mission_id) VALUES (:id, :org, 'W', :mission)"),
            {**params, "id": work_id, "mission": mission},
        )
    await session.execute(
        text(
            "INSERT INTO team_resources (team_id, organization_id, resource_type, resource_id)"
            " VALUES (:team, :org, 'work', :work)"
        ),
        {**params, "team": team, "work": work},
    )
    await session.execute(
        text(
            "INSERT INTO api_keys (id, organization_id, name, key_hash, role)"
            " VALUES (:id, :org, 'agent', :hash, 'member')"
        ),
        {**params, "id": uuid.uuid4(), "hash": uuid.uuid4().hex},
    )
    await session.execute(
        text(
            "INSERT INTO kb_uploads (id, organization_id, filename, media_type, size_bytes)"
            " VALUES (:id, :org, 'a.pdf', 'application/pdf', 10)"
        ),
        {**params, "id": uuid.uuid4()},
    )
    for n in range(documents):
        doc_id = uuid.uuid4()
        org.documents.append(doc_id)
        await session.execute(
            text(
                "INSERT INTO kb_documents (id, organization_id, scope, title, status, source, body, content_hash,"
                " version, updated_at) VALUES (:id, :org, 'org', :title, 'published', 'kb', 'body', 'h', 1, now())"
            ),
            {**params, "id": doc_id, "title": f"doc {n}"},
        )
        await session.execute(
            text(
                "INSERT INTO kb_chunks (document_id, organization_id, ordinal, heading, text, content_hash)"
                " VALUES (:doc, :org, 0, '', 'passage', 'h')"
            ),
            {**params, "doc": doc_id},
        )
    await session.execute(
        text("INSERT INTO kb_citations (organization_id, citing_id, cited_id) VALUES (:org, :a, :b)"),
        {**params, "a": org.documents[0], "b": org.documents[1]},
    )
    org.counts = {
        "kb_documents": documents,
        "kb_chunks": documents,
        "works": 2,
        "org_members": 2,
        "api_keys": 1,
        "missions": 1,
        "teams": 1,
        "team_resources": 1,
        "kb_uploads": 1,
        "kb_citations": 1,
    }
    return org


@dataclass(frozen=True)
class Seeded:
    a: SeededOrg
    b: SeededOrg


@pytest.fixture
async def seeded(migrated: Infrastructure) -> AsyncIterator[Seeded]:
    owner = make_engine(migrated.database_url, pool_size=1)
    try:
        sessions = make_sessionmaker(owner)
        async with sessions() as session, session.begin():
            a = await _seed(session, documents=3)
        async with sessions() as session, session.begin():
            b = await _seed(session, documents=5)
        yield Seeded(a, b)
    finally:
        await owner.dispose()


@pytest.fixture
async def app_engine(migrated: Infrastructure) -> AsyncIterator[AsyncEngine]:
    """The application role, with the same pool the services get at pool_size=1: 1 + 1 overflow = 2."""
    engine = make_engine(migrated.app_database_url, pool_size=1)
    yield engine
    await engine.dispose()


async def _counts(session: AsyncSession) -> dict[str, int]:
    return {table: int(await session.scalar(text(f"SELECT count(*) FROM {table}")) or 0) for table in TABLES}


async def _owners(session: AsyncSession) -> dict[str, Counter[uuid.UUID]]:
    found: dict[str, Counter[uuid.UUID]] = {}
    for table in TABLES:
        rows = await session.execute(text(f"SELECT organization_id, count(*) AS n FROM {table} GROUP BY 1"))
        found[table] = Counter({row.organization_id: row.n for row in rows})
    return found


async def test_no_organization_set_returns_no_rows(seeded: Seeded, app_engine: AsyncEngine) -> None:
    sessions = make_sessionmaker(app_engine)
    # The rows exist: bound to its organization, the same role sees them.
    async with org_transaction(sessions, seeded.a.id) as session:
        assert await _counts(session) == seeded.a.counts
    # Nothing bound: no rows of any organization (other tests' included), not even a count.
    async with sessions() as session, session.begin():
        assert await _counts(session) == dict.fromkeys(TABLES, 0)
        found = await session.scalar(
            text("SELECT count(*) FROM kb_documents WHERE id = ANY(:ids)"), {"ids": seeded.a.documents}
        )
        assert found == 0
    # Bound to "" (how a reset setting reads): still nothing.
    async with sessions() as session, session.begin():
        await session.execute(text("SELECT set_config('cortex.organization_id', '', true)"))
        assert await _counts(session) == dict.fromkeys(TABLES, 0)


async def test_the_setting_lasts_one_transaction_on_a_reused_connection(
    seeded: Seeded, migrated: Infrastructure
) -> None:
    engine = make_engine(migrated.app_database_url, pool_size=1)
    try:
        sessions = make_sessionmaker(engine)
        async with org_transaction(sessions, seeded.a.id) as session:
            pid = await session.scalar(text("SELECT pg_backend_pid()"))
            assert await session.scalar(text("SELECT count(*) FROM kb_documents")) == 3
        async with sessions() as session, session.begin():
            assert await session.scalar(text("SELECT pg_backend_pid()")) == pid  # the same pooled connection
            assert await session.scalar(text("SELECT count(*) FROM kb_documents")) == 0
        # A rolled-back transaction leaves nothing behind either.
        async with sessions() as session:
            await session.begin()
            await bind_organization(session, seeded.b.id)
            assert await session.scalar(text("SELECT count(*) FROM kb_documents")) == 5
            await session.rollback()
        async with sessions() as session, session.begin():
            assert await session.scalar(text("SELECT pg_backend_pid()")) == pid
            assert await session.scalar(text("SELECT count(*) FROM kb_documents")) == 0
    finally:
        await engine.dispose()


async def test_one_organization_set_shows_only_its_rows(seeded: Seeded, app_engine: AsyncEngine) -> None:
    sessions = make_sessionmaker(app_engine)
    for org in (seeded.a, seeded.b):
        async with org_transaction(sessions, org.id) as session:
            owners = await _owners(session)
        assert owners == {table: Counter({org.id: n}) for table, n in org.counts.items()}
    # Asking for the other organization's rows by id finds nothing.
    async with org_transaction(sessions, seeded.a.id) as session:
        found = await session.scalar(
            text("SELECT count(*) FROM kb_documents WHERE organization_id = :b OR id = ANY(:ids)"),
            {"b": seeded.b.id, "ids": seeded.b.documents},
        )
        assert found == 0


def _refused_by_policy(exc: DBAPIError) -> bool:
    return "row-level security" in str(exc.orig)


WRITES_FOR_B = {
    "kb_documents": (
        "INSERT INTO kb_documents (id, organization_id, scope, title, status, source, body, content_hash, version,"
        " updated_at) VALUES (gen_random_uuid(), :b, 'org', 'planted', 'published', 'kb', '', '', 1, now())"
    ),
    "kb_chunks": (
        "INSERT INTO kb_chunks (document_id, organization_id, ordinal, heading, text, content_hash)"
        " VALUES (:a_doc, :b, 9, '', 'planted', 'h')"
    ),
    "works": "INSERT INTO works (id, organization_id, title) VALUES (gen_random_uuid(), :b, 'planted')",
    "org_members": "INSERT INTO org_members (organization_id, user_id, role) VALUES (:b, 'intruder', 'admin')",
    "api_keys": (
        "INSERT INTO api_keys (id, organization_id, name, key_hash, role)"
        " VALUES (gen_random_uuid(), :b, 'planted', md5(random()::text), 'admin')"
    ),
    "teams": "INSERT INTO teams (id, organization_id, name) VALUES (gen_random_uuid(), :b, 'planted')",
    "move a document to b": "UPDATE kb_documents SET organization_id = :b WHERE id = :a_doc",
    "move a member to b": "UPDATE org_members SET organization_id = :b WHERE organization_id = :a",
}


@pytest.mark.parametrize("write", list(WRITES_FOR_B))
async def test_writing_another_organizations_row_is_refused(
    seeded: Seeded, app_engine: AsyncEngine, write: str
) -> None:
    sessions = make_sessionmaker(app_engine)
    params = {"a": seeded.a.id, "b": seeded.b.id, "a_doc": seeded.a.documents[0]}
    with pytest.raises(DBAPIError) as refused:
        async with org_transaction(sessions, seeded.a.id) as session:
            await session.execute(text(WRITES_FOR_B[write]), params)
    assert _refused_by_policy(refused.value), refused.value
    # And B's rows cannot be changed or deleted from A's transaction: they are not there to touch.
    async with org_transaction(sessions, seeded.a.id) as session:
        updated = await session.execute(text("UPDATE kb_documents SET title = 'x' WHERE organization_id = :b"), params)
        deleted = await session.execute(text("DELETE FROM works WHERE organization_id = :b"), params)
        assert (updated.rowcount, deleted.rowcount) == (0, 0)  # type: ignore[attr-defined]
    async with org_transaction(sessions, seeded.b.id) as session:
        assert await _counts(session) == seeded.b.counts


async def test_the_service_role_cannot_bypass_row_level_security(seeded: Seeded, app_engine: AsyncEngine) -> None:
    sessions = make_sessionmaker(app_engine)
    async with sessions() as session, session.begin():
        role = (
            await session.execute(
                text("SELECT current_user AS name, rolbypassrls, rolsuper FROM pg_roles WHERE rolname = current_user")
            )
        ).one()
        assert role.name == "cortex_app"
        assert (role.rolbypassrls, role.rolsuper) == (False, False)
        tables = await session.execute(text("SELECT tablename, tableowner FROM pg_tables WHERE schemaname = 'public'"))
        owners = {row.tablename: row.tableowner for row in tables}
        assert owners["kb_documents"] != role.name
        assert role.name not in owners.values()  # it owns no table at all
        # Every table that holds an organization's rows has forced row-level security and a policy.
        tenant_tables = set(
            await session.scalars(
                text(
                    "SELECT table_name FROM information_schema.columns"
                    " WHERE table_schema = 'public' AND column_name = 'organization_id'"
                )
            )
        )
        assert set(TABLES) <= tenant_tables
        flags = (
            await session.execute(
                text(
                    "SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity,"
                    " EXISTS (SELECT 1 FROM pg_policy p WHERE p.polrelid = c.oid) AS has_policy"
                    " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                    " WHERE n.nspname = 'public' AND c.relname = ANY(:tables)"
                ),
                {"tables": sorted(tenant_tables)},
            )
        ).all()
        unprotected = [
            row.relname for row in flags if not (row.relrowsecurity and row.relforcerowsecurity and row.has_policy)
        ]
        assert unprotected == []
        assert len(flags) == len(tenant_tables)
    # Switching row security off does not show more: for this role it is an error instead.
    with pytest.raises(DBAPIError) as refused:
        async with sessions() as session, session.begin():
            await session.execute(text("SET LOCAL row_security = off"))
            await session.execute(text("SELECT count(*) FROM kb_documents"))
    assert "row-level security" in str(refused.value.orig)
    # Nor can it turn the policy off.
    with pytest.raises(DBAPIError) as not_owner:
        async with sessions() as session, session.begin():
            await session.execute(text("ALTER TABLE kb_documents NO FORCE ROW LEVEL SECURITY"))
    assert "must be owner" in str(not_owner.value.orig)


async def test_interleaved_transactions_over_two_connections_never_see_the_other_organization(
    seeded: Seeded, app_engine: AsyncEngine
) -> None:
    sessions: async_sessionmaker[AsyncSession] = make_sessionmaker(app_engine)
    orgs = {seeded.a.id: set(seeded.a.documents), seeded.b.id: set(seeded.b.documents)}
    # 500 of each in a shuffled order: strict alternation over two connections would pin each
    # organization to one connection and never reuse a connection across organizations.
    order = [seeded.a.id, seeded.b.id] * 500
    random.Random(1000).shuffle(order)

    # Requests in flight are bounded: 1,000 waiting at once for two connections would wait longer than
    # the pool's checkout timeout on a busy machine.
    in_flight = asyncio.Semaphore(32)

    async def request(org_id: uuid.UUID) -> tuple[uuid.UUID, int, list[tuple[uuid.UUID, uuid.UUID]]]:
        async with in_flight, org_transaction(sessions, org_id) as session:
            pid = int(await session.scalar(text("SELECT pg_backend_pid()")) or 0)
            await asyncio.sleep(0)  # let the other requests interleave while this transaction is open
            rows = await session.execute(text("SELECT id, organization_id FROM kb_documents"))
            found = [(row.id, row.organization_id) for row in rows]
        return org_id, pid, found

    async def unbound() -> int:
        async with sessions() as session, session.begin():
            return int(await session.scalar(text("SELECT count(*) FROM kb_documents")) or 0)

    results = await asyncio.gather(*(request(org_id) for org_id in order))
    leftovers = await asyncio.gather(*(unbound() for _ in range(20)))

    served: dict[int, Counter[uuid.UUID]] = {}
    for org_id, pid, rows in results:
        served.setdefault(pid, Counter())[org_id] += 1
        assert {owner for _, owner in rows} == {org_id}
        assert {doc for doc, _ in rows} == orgs[org_id]
    assert len(results) == 1000
    # The fault the test is about did happen: a connection served both organizations in turn. (The pool
    # keeps one connection and opens its overflow one as needed, so on a busy machine more than two
    # backends may take part.)
    assert any(set(seen) == set(orgs) for seen in served.values()), served
    assert app_engine.pool.size() == 1  # type: ignore[attr-defined]
    # And a transaction that binds nothing, on a connection both organizations used, sees nothing.
    assert leftovers == [0] * 20
