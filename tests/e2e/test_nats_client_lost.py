"""A NATS client that nats-py closes for good stops its service, for the supervisor to restart it.

nats-py reconnects after a dropped connection, but on an `-ERR` from the server it closes the client and
never opens it again. The gateway then answered 503 to everything, the aggregator no search at all, until
someone restarted them. Here the server really sends one: a message whose payload passes nats-py's own
check but whose headers take it over the server's max_payload.
"""

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
import uvicorn
from nats.aio.client import Client as NATS
from nats.errors import ConnectionClosedError

import cortex_aggregator.bootstrap
import cortex_indexer.bootstrap
from cortex_aggregator.bootstrap import build as build_aggregator
from cortex_aggregator.settings import AggregatorSettings
from cortex_embedded_servers import free_port
from cortex_gateway.app import create_app
from cortex_gateway.settings import GatewaySettings
from cortex_indexer.bootstrap import build as build_indexer
from cortex_indexer.settings import IndexerSettings
from cortex_messaging.connection import connect, disconnect
from tests.infrastructure import Infrastructure
from tests.services import SECRET

pytestmark = pytest.mark.e2e

Connect = Callable[..., Awaitable[NATS]]


async def make_the_server_close(nc: NATS) -> None:
    """Publish what the server answers with `-ERR 'Maximum Payload Violation'` (and closes the connection)."""
    await nc.publish("tests.oversized", b"x" * (nc.max_payload - 10), headers={"Padding": "y" * 100})
    with contextlib.suppress(ConnectionClosedError):  # closed before the flush's answer
        await nc.flush(timeout=5)


@pytest.fixture
def clients(monkeypatch: pytest.MonkeyPatch) -> list[NATS]:
    """The clients the aggregator and the indexer connect (they connect inside `run`)."""
    made: list[NATS] = []

    def recording(real: Connect) -> Connect:
        async def connect_and_record(*args: Any, **kwargs: Any) -> NATS:
            nc = await real(*args, **kwargs)
            made.append(nc)
            return nc

        return connect_and_record

    monkeypatch.setattr(cortex_aggregator.bootstrap, "connect", recording(connect))
    monkeypatch.setattr(cortex_indexer.bootstrap, "connect", recording(connect))
    return made


async def first_client(clients: list[NATS]) -> NATS:
    async with asyncio.timeout(30):
        while not clients:
            await asyncio.sleep(0.05)
    return clients[0]


async def test_a_client_the_server_closes_is_reported_lost(infra: Infrastructure) -> None:
    lost = asyncio.Event()
    nc = await connect(infra.nats_url, "tests", on_lost=lost.set)

    await make_the_server_close(nc)
    await asyncio.wait_for(lost.wait(), timeout=10)

    assert lost.is_set()
    assert nc.is_closed
    assert "maximum payload violation" in str(nc.last_error)


async def test_a_client_closed_on_purpose_is_not_reported_lost(infra: Infrastructure) -> None:
    lost = asyncio.Event()
    nc = await connect(infra.nats_url, "tests", on_lost=lost.set)

    await disconnect(nc)
    await asyncio.sleep(0.2)

    assert nc.is_closed
    assert not lost.is_set()


async def test_the_aggregator_stops_as_lost(migrated: Infrastructure, clients: list[NATS]) -> None:
    aggregator = build_aggregator(
        AggregatorSettings(
            database_url=migrated.app_database_url, nats_url=migrated.nats_url, secret=SECRET, embedder="none"
        )
    )
    running = asyncio.create_task(aggregator.run())
    async with asyncio.timeout(30):
        await aggregator.ready.wait()

    await make_the_server_close(await first_client(clients))

    await asyncio.wait_for(running, timeout=30)  # it used to wait for a stop signal for ever
    assert aggregator.lost


async def test_the_indexer_stops_as_lost(migrated: Infrastructure, clients: list[NATS]) -> None:
    indexer = build_indexer(
        IndexerSettings(database_url=migrated.app_database_url, nats_url=migrated.nats_url, embedder="none")
    )
    running = asyncio.create_task(indexer.run())
    nc = await first_client(clients)
    await asyncio.sleep(1)  # its consumers bound

    await make_the_server_close(nc)

    await asyncio.wait_for(running, timeout=30)
    assert indexer.lost


async def test_the_indexer_closed_while_it_starts_stops_as_lost(migrated: Infrastructure, clients: list[NATS]) -> None:
    """Before: closed while binding its consumers (a loaded machine, in the test above), it raised
    ConnectionClosedError instead of stopping as lost."""
    indexer = build_indexer(
        IndexerSettings(database_url=migrated.app_database_url, nats_url=migrated.nats_url, embedder="none")
    )
    running = asyncio.create_task(indexer.run())

    await make_the_server_close(await first_client(clients))  # at once: it is still starting

    await asyncio.wait_for(running, timeout=30)
    assert indexer.lost


@pytest.fixture
async def gateway(migrated: Infrastructure) -> AsyncIterator[tuple[Any, asyncio.Event]]:
    """An in-process gateway whose `on_nats_lost` sets the event it yields, with its app."""
    lost = asyncio.Event()
    port = free_port("127.0.0.1")
    settings = GatewaySettings(
        database_url=migrated.app_database_url, nats_url=migrated.nats_url, secret=SECRET, port=port
    )
    app = create_app(settings, on_nats_lost=lost.set)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    serving = asyncio.create_task(server.serve())
    try:
        async with asyncio.timeout(30):
            while not server.started:
                await asyncio.sleep(0.05)
        yield app, lost
    finally:
        server.should_exit = True
        await asyncio.gather(serving, return_exceptions=True)


async def test_the_gateway_is_told_to_stop(gateway: tuple[Any, asyncio.Event]) -> None:
    app, lost = gateway

    await make_the_server_close(app.state.resources.nc)

    await asyncio.wait_for(lost.wait(), timeout=10)
