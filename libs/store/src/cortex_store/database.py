"""Engine and session factory. Built by each service's bootstrap, never at import time."""

import asyncio
import functools
import logging
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
import sqlalchemy.exc
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

log = logging.getLogger(__name__)

# asyncpg's default is 60 s, libpq's no limit: a frozen server would hold a command or a request that long.
CONNECT_SECONDS = 10.0


class DatabaseTimeout(ConnectionError):
    """A new connection got no answer in time: the server cannot be reached now (see `unreachable`)."""


# What a connection the server closed raises, depending on when asyncpg notices.
CONNECTION_LOST = (asyncpg.ConnectionDoesNotExistError, asyncpg.InterfaceError, asyncpg.PostgresConnectionError)
# What says the server cannot be reached now, rather than that a statement or its data is wrong: a lost
# connection, a server down, starting up or out of connections, and a pool whose connections all hang. Not
# every InterfaceError: asyncpg's DataError (a value a query cannot take) is one.
_UNREACHABLE = (
    asyncpg.PostgresConnectionError,
    asyncpg.CannotConnectNowError,
    asyncpg.TooManyConnectionsError,
    ConnectionError,
    socket.gaierror,
    sqlalchemy.exc.TimeoutError,
)


def unreachable(exc: BaseException) -> bool:
    """Whether `exc`, or an exception it was raised from, says PostgreSQL cannot be reached now."""
    seen: BaseException | None = exc
    for _ in range(16):  # a chain, however long, of wrappers
        if seen is None:
            return False
        if isinstance(seen, _UNREACHABLE) or (isinstance(seen, asyncpg.InterfaceError) and "is closed" in str(seen)):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def async_url(database_url: str) -> str:
    """Accept `postgresql://` / `postgres://` URLs too, and use the asyncpg driver."""
    url = make_url(database_url.replace("postgres://", "postgresql://", 1))
    return url.set(drivername="postgresql+asyncpg").render_as_string(hide_password=False)


def asyncpg_dsn(database_url: str) -> str:
    """A DSN for asyncpg itself (`asyncpg.connect`, `asyncpg.create_pool`): plain `postgresql://`, without
    libpq's `connect_timeout` (asyncpg would send it to the server as a setting, which refuses it)."""
    url = make_url(async_url(database_url)).difference_update_query(["connect_timeout"])
    return url.render_as_string(hide_password=False).replace("postgresql+asyncpg://", "postgresql://", 1)


def connect_seconds(database_url: str) -> float | None:
    """How long a new connection may take: the URL's `connect_timeout` as libpq reads it (0 or less: no
    limit), else CONNECT_SECONDS."""
    given = make_url(async_url(database_url)).query.get("connect_timeout")
    if given is None:
        return CONNECT_SECONDS
    if isinstance(given, tuple):  # named more than once: the last counts, as in libpq
        given = given[-1]
    try:
        seconds = float(given)
    except ValueError:
        raise ValueError(f"DATABASE_URL's connect_timeout is {given!r}, not a number of seconds") from None
    return seconds if seconds > 0 else None


def connector(database_url: str) -> Callable[..., Awaitable[asyncpg.Connection]]:
    """`asyncpg.connect` within the URL's `connect_seconds`, for pools (`create_pool(connect=…)`) and engines:
    a server that accepts connections but does not answer (frozen, or its host gone) raises DatabaseTimeout."""
    seconds = connect_seconds(database_url)

    async def connect(*args: Any, **kwargs: Any) -> asyncpg.Connection:
        kwargs.setdefault("timeout", seconds)
        try:
            return await asyncpg.connect(*args, **kwargs)
        except TimeoutError as exc:  # asyncpg's, or the system's own when there is no limit
            within = "" if seconds is None else f" within {seconds:g} s"
            raise DatabaseTimeout(f"PostgreSQL did not answer{within}") from exc

    return connect


def make_engine(
    database_url: str,
    *,
    pool_size: int = 5,
    max_overflow: int | None = None,
    server_settings: dict[str, str] | None = None,
    pre_ping: bool = True,
) -> AsyncEngine:
    """`pre_ping=False` saves three round trips per checkout (asyncpg pings with BEGIN, `;`, ROLLBACK);
    the caller must then try again when a statement fails on a connection the server closed.
    `max_overflow` (default: `pool_size`) connections beyond the pool are opened under load and closed
    when returned: each is a new server process, so a service that is busy for long wants none."""
    dsn, connect_within = asyncpg_dsn(database_url), connector(database_url)

    async def connect() -> asyncpg.Connection:
        # asyncpg reads the URL's libpq parameters itself (`sslmode=require`, `sslrootcert`, …): SQLAlchemy's
        # dialect would pass each to asyncpg.connect as a keyword it does not take, a TypeError at start.
        return await connect_within(dsn, server_settings=server_settings or None)

    return create_async_engine(
        async_url(database_url),
        pool_size=pool_size,
        max_overflow=pool_size if max_overflow is None else max_overflow,
        pool_pre_ping=pre_ping,
        async_creator=connect,
    )


async def open_pool(engine: AsyncEngine, connections: int) -> None:
    """Open `connections` of the engine's pool now, at start-up, rather than one by one as the first load
    arrives: each is a server process to start and a driver's first queries, in the latency of the first
    events. Best effort: a database that does not answer yet is logged, and connections open on demand."""
    opened = await asyncio.gather(*(engine.connect().start() for _ in range(connections)), return_exceptions=True)
    for connection in opened:
        if isinstance(connection, AsyncConnection):
            await connection.close()  # back to the pool, still open
    failures = [outcome for outcome in opened if isinstance(outcome, BaseException)]
    if failures:
        log.warning(
            "opened %d of %d database connections at start-up: %s",
            connections - len(failures),
            connections,
            failures[0],
        )


def make_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)


async def driver_connection(session: AsyncSession) -> Any:
    """The session's asyncpg connection, inside the session's transaction: for hot paths that want rows
    as plain records, without SQLAlchemy's per-statement and per-row work."""
    connection = await session.connection()
    raw = await connection.get_raw_connection()
    return raw.driver_connection


@functools.lru_cache(maxsize=16)
def _autocommit_engine(engine: AsyncEngine) -> AsyncEngine:
    """The engine's pool, with its connections in autocommit while checked out (made once: per call it cost
    more than the statement's own Python)."""
    return engine.execution_options(isolation_level="AUTOCOMMIT")


def _statement_error(exc: BaseException) -> bool:
    """An error the server reported for a statement, on a connection still fit for the next one."""
    connection_lost = (asyncpg.PostgresConnectionError, asyncpg.exceptions.OperatorInterventionError)
    return isinstance(exc, asyncpg.PostgresError) and not isinstance(exc, connection_lost)


@asynccontextmanager
async def autocommit_connection(sessions: async_sessionmaker[AsyncSession]) -> AsyncIterator[Any]:
    """An asyncpg connection from the sessions' pool on which every statement is its own transaction:
    one round trip for a statement that does a whole transaction's work (a database function), with
    no BEGIN and COMMIT around it.

    SQLAlchemy does not see what fails on it, so this discards the connection itself after anything but a
    statement's own error: a connection the server closed (asyncpg may notice only as the next statement
    starts, and then reports a protocol error), or a statement cancelled midway, is not pooled again."""
    async with _autocommit_engine(sessions.kw["bind"]).connect() as connection:
        raw = await connection.get_raw_connection()
        driver = raw.driver_connection
        try:
            yield driver
        except BaseException as exc:
            if not _statement_error(exc):
                await connection.invalidate()
            raise
