"""The FastAPI application. `create_app` builds nothing until the lifespan starts."""

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI
from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor

from cortex_gateway.access import make_access_pool
from cortex_gateway.credentials import JwtVerifier
from cortex_gateway.head_requests import HeadAsGet
from cortex_gateway.limits import BodyLimit, RateLimit
from cortex_gateway.problems import install_problem_handlers
from cortex_gateway.resources import Resources
from cortex_gateway.routes import entries, health, memory, notes, plugins
from cortex_gateway.settings import GatewaySettings
from cortex_messaging.buckets import Buckets
from cortex_messaging.connection import StoppedBeforeConnected, connect, disconnect
from cortex_messaging.streams import ensure_streams
from cortex_plugins import PluginRegistry
from cortex_store.database import make_engine, make_sessionmaker
from cortex_telemetry.heap import freeze_startup_heap

log = logging.getLogger(__name__)
STOP_POLL_SECONDS = 0.1  # as often as uvicorn's own loop looks at its `should_exit`


async def _stop_when(stopping: Callable[[], bool], stop: asyncio.Event) -> None:
    while not stopping():  # noqa: ASYNC110 — uvicorn's `should_exit` is a flag, set in a signal handler
        await asyncio.sleep(STOP_POLL_SECONDS)
    stop.set()


def create_app(
    settings: GatewaySettings,
    *,
    on_nats_lost: Callable[[], None] | None = None,
    stopping: Callable[[], bool] = lambda: False,
) -> FastAPI:
    """`on_nats_lost`: called if the NATS client closes for good (cortex_messaging.connection); the server
    should stop then, to be restarted: every request that needs NATS would fail until it is. `stopping`: True
    once the server is told to stop (uvicorn's `should_exit`); while NATS cannot be reached at start, the
    lifespan gives up then instead of trying for ever (uvicorn handles no signal before its lifespan ends)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # Two pools, 10 connections at most in all, as before: the caller lookup on every request
        # (autocommit, asyncpg's own pool: access.py), and sessions for the rest (plugin listing, readiness).
        engine = make_engine(settings.database_url, pool_size=2)
        access_pool = await make_access_pool(settings.database_url, size=6)
        stop = asyncio.Event()
        watch = asyncio.create_task(_stop_when(stopping, stop))
        try:
            nc = await connect(settings.nats_url, name="cortex-gateway", on_lost=on_nats_lost, stop=stop)
        except StoppedBeforeConnected as exc:
            log.info("%s", exc)
            nc = None
        finally:
            watch.cancel()
        if nc is None:  # nothing to serve: uvicorn binds, sees that it must stop, and stops
            await access_pool.close()
            await engine.dispose()
            yield
            return
        js = nc.jetstream()
        await ensure_streams(js)
        app.state.resources = Resources(settings, engine, make_sessionmaker(engine), nc, js, access_pool, Buckets(js))
        app.state.plugins.use_database(app.state.resources.sessions)
        freeze_startup_heap()
        try:
            yield
        finally:
            await disconnect(nc)
            await access_pool.close()
            await engine.dispose()

    app = FastAPI(
        title="Cortex",
        summary="Organization-wide memory: search and browse everything an organization knows.",
        version="0.1.0",
        lifespan=lifespan,
        redirect_slashes=False,  # a 307 to the path without "/" names the request's Host: a 404 problem instead
    )
    install_problem_handlers(app)
    app.include_router(health.router)
    app.include_router(memory.router)
    app.include_router(notes.router)
    app.include_router(entries.router)
    app.include_router(plugins.router)
    app.state.jwt_verifier = JwtVerifier(settings)
    app.state.plugins = PluginRegistry.from_environment()  # pins now; plugins load on first use
    app.add_middleware(RateLimit, per_minute=settings.rate_limit_per_minute, burst=settings.rate_limit_burst)
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    app.add_middleware(HeadAsGet)  # HEAD wherever GET, its body dropped
    # One server span per request; not one more per ASGI send/receive (two or three per request).
    FastAPIInstrumentor.instrument_app(app, excluded_urls="healthz,readyz", exclude_spans=["receive", "send"])
    return app
