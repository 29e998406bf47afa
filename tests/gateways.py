"""An extra gateway, served in-process next to the session's services, with settings of its own.

Used where a test needs settings the shared gateway does not have: a JWKS URL, production rate limits
on a fresh bucket table, or limits high enough for a generated test to make hundreds of requests.
It talks to the same PostgreSQL (as the application role) and NATS, so the session's aggregator answers.
"""

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from cortex_embedded_servers import free_port
from cortex_gateway.settings import GatewaySettings
from tests.infrastructure import Infrastructure
from tests.services import SECRET, gateway_server

# Enough for a generated test's hundreds of requests with one token; the defaults are tested separately.
ROOMY_LIMITS: dict[str, Any] = {"rate_limit_per_minute": 600_000, "rate_limit_burst": 10_000}


@contextlib.asynccontextmanager
async def running_gateway(infra: Infrastructure, **settings: Any) -> AsyncIterator[str]:
    """Serve a gateway built with `settings` (over the test defaults); yields its base URL."""
    port = free_port("127.0.0.1")
    gateway_settings = GatewaySettings(
        **{
            "database_url": infra.app_database_url,
            "nats_url": infra.nats_url,
            "secret": SECRET,
            "port": port,
            "wait_timeout_seconds": 20,
            **settings,
        }
    )
    server = gateway_server(gateway_settings)
    task = asyncio.create_task(server.serve())
    try:
        async with asyncio.timeout(30):
            while not server.started:
                if task.done():
                    task.result()  # raises what stopped it
                    raise RuntimeError("the gateway stopped before it started")
                await asyncio.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await asyncio.gather(task, return_exceptions=True)
