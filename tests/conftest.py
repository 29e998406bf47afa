"""Session-wide real infrastructure and services; a fresh organization per test keeps tests apart."""

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass

import httpx
import pytest
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sqlalchemy.ext.asyncio import AsyncEngine

from cortex_cli.organizations import ensure_membership
from cortex_gateway.tokens import issue_token
from cortex_messaging.connection import connect, disconnect
from cortex_messaging.streams import ensure_streams
from cortex_store.database import make_engine
from cortex_store.migrate import upgrade_async
from cortex_store.models import MemberRole
from tests.infrastructure import Infrastructure, infrastructure
from tests.rerank_server import RerankServer, serving_reranker
from tests.services import RunningServices, running_services


@pytest.fixture(scope="session")
def spans() -> InMemorySpanExporter:
    """Every span the in-process services record (installed before any service starts)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return exporter


@pytest.fixture(scope="session")
def infra() -> Iterator[Infrastructure]:
    with infrastructure() as running:
        yield running


@pytest.fixture(scope="session")
async def migrated(infra: Infrastructure) -> Infrastructure:
    await upgrade_async(infra.database_url)
    return infra


@pytest.fixture
async def owner(migrated: Infrastructure) -> AsyncIterator[AsyncEngine]:
    """An engine as the database's owner: outside row-level security (e.g. to terminate backends)."""
    engine = make_engine(migrated.database_url, pool_size=1)
    yield engine
    await engine.dispose()


@pytest.fixture(scope="session")
def reranker() -> Iterator[RerankServer]:
    """The rerank endpoint the services are configured with (CORTEX_RERANKER_BASE_URL), as a deployment
    would set it: only organizations that choose the `http` reranker use it."""
    with serving_reranker() as server, pytest.MonkeyPatch.context() as patch:
        patch.setenv("CORTEX_RERANKER_BASE_URL", server.url)
        yield server


@pytest.fixture(scope="session")
async def services(
    migrated: Infrastructure, spans: InMemorySpanExporter, reranker: RerankServer
) -> AsyncIterator[RunningServices]:
    async with running_services(migrated) as running:
        yield running


@pytest.fixture(scope="session")
async def nats_client(infra: Infrastructure) -> AsyncIterator[NATS]:
    nc = await connect(infra.nats_url, name="tests")
    await ensure_streams(nc.jetstream())
    yield nc
    await disconnect(nc)


@pytest.fixture(scope="session")
def js(nats_client: NATS) -> JetStreamContext:
    return nats_client.jetstream()


@dataclass(frozen=True)
class Org:
    slug: str
    id: uuid.UUID
    admin: httpx.AsyncClient
    member: httpx.AsyncClient


OrgFactory = Callable[[], Awaitable[Org]]


@pytest.fixture
async def make_org(services: RunningServices, migrated: Infrastructure) -> AsyncIterator[OrgFactory]:
    clients: list[httpx.AsyncClient] = []

    async def client(slug: str, user: str, role: MemberRole) -> httpx.AsyncClient:
        await ensure_membership(migrated.database_url, slug, user, role, create=True)
        http = httpx.AsyncClient(
            base_url=services.base_url,
            timeout=30,
            headers={"Authorization": f"Bearer {issue_token(user, services.secret)}", "X-Scope-Slug": slug},
        )
        clients.append(http)
        return http

    async def make() -> Org:
        slug = f"org-{uuid.uuid4().hex[:12]}"
        admin = await client(slug, f"admin-{slug}", MemberRole.ADMIN)
        member = await client(slug, f"member-{slug}", MemberRole.MEMBER)
        org_id = await ensure_membership(migrated.database_url, slug, f"admin-{slug}", MemberRole.ADMIN, create=False)
        return Org(slug=slug, id=org_id, admin=admin, member=member)

    yield make
    for http in clients:
        await http.aclose()


@pytest.fixture
async def org(make_org: OrgFactory) -> Org:
    return await make_org()
