"""The Cortex services, run inside the test process against the real infrastructure."""

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

import uvicorn

from cortex_aggregator.bootstrap import Aggregator
from cortex_aggregator.bootstrap import build as build_aggregator
from cortex_aggregator.settings import AggregatorSettings
from cortex_embedded_servers import free_port
from cortex_gateway.app import create_app
from cortex_gateway.http_protocol import ProblemHttpProtocol
from cortex_gateway.settings import GatewaySettings
from cortex_indexer.bootstrap import Indexer
from cortex_indexer.bootstrap import build as build_indexer
from cortex_indexer.settings import IndexerSettings
from cortex_supervision.service_run import Service
from tests.infrastructure import Infrastructure

EXTRACTION_TIMEOUT = 5.0  # seconds; the test files read in milliseconds, a slow one is made to take minutes

SECRET = "test-secret-" + "x" * 32


@dataclass(frozen=True)
class RunningServices:
    base_url: str
    secret: str
    indexer: Indexer
    aggregator: Aggregator


@contextlib.asynccontextmanager
async def service_running(service: Service) -> AsyncIterator[None]:
    """`service.run()` as a task for the block; then stopped as on SIGTERM, its errors raised."""
    task = asyncio.create_task(service.run())
    try:
        yield
    finally:
        service.stop.set()
        await task


def gateway_server(settings: GatewaySettings) -> uvicorn.Server:
    """The gateway as its __main__ serves it (the same HTTP protocol), on the settings' port."""
    config = uvicorn.Config(
        create_app(settings),
        host="127.0.0.1",
        port=settings.port,
        log_level="warning",
        lifespan="on",
        http=ProblemHttpProtocol,
    )
    return uvicorn.Server(config)


@contextlib.asynccontextmanager
async def running_services(infra: Infrastructure) -> AsyncIterator[RunningServices]:
    db, nats = infra.app_database_url, infra.nats_url
    indexer = build_indexer(
        IndexerSettings(database_url=db, nats_url=nats, max_deliver=3, extraction_timeout_seconds=EXTRACTION_TIMEOUT)
    )
    aggregator = build_aggregator(AggregatorSettings(database_url=db, nats_url=nats, secret=SECRET))
    port = free_port("127.0.0.1")
    gateway_settings = GatewaySettings(
        database_url=db, nats_url=nats, secret=SECRET, port=port, wait_timeout_seconds=20
    )
    server = gateway_server(gateway_settings)
    tasks = [
        asyncio.create_task(indexer.run()),
        asyncio.create_task(aggregator.run()),
        asyncio.create_task(server.serve()),
    ]
    try:
        async with asyncio.timeout(60):
            await aggregator.ready.wait()
            while not server.started:
                await asyncio.sleep(0.05)
        yield RunningServices(f"http://127.0.0.1:{port}", SECRET, indexer, aggregator)
    finally:
        indexer.stop.set()
        aggregator.stop.set()
        server.should_exit = True
        await asyncio.gather(*tasks, return_exceptions=True)
