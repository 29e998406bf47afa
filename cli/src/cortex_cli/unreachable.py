"""A database or NATS that does not answer the CLI is one line of error within seconds: not a traceback,
and not a wait without end (the services' NATS connections retry forever, by design; a command should not)."""

import socket

import nats
import nats.errors
import sqlalchemy.exc
from nats.aio.client import Client as NATS
from nats.errors import NoServersError

CONNECT_SECONDS = 3
# SQLSTATE classes of a refused connection: connection exception, invalid authorization, unknown database;
# the server starting up or shutting down; too many connections.
REFUSALS = ("08", "28", "3D", "57P03", "53300")


class Unreachable(RuntimeError):
    pass


async def connect_nats(url: str) -> NATS:
    async def quiet(exc: Exception) -> None:
        """Each failed attempt; the one line said is Unreachable's."""

    try:
        return await nats.connect(
            url,
            name="cortex-cli",
            connect_timeout=CONNECT_SECONDS,
            max_reconnect_attempts=1,
            reconnect_time_wait=0.5,
            error_cb=quiet,
        )
    except (NoServersError, OSError, TimeoutError) as exc:
        raise Unreachable(f"cannot reach NATS at {url} (check NATS_URL, or that `cortex run` is running)") from exc


def database_refusal(exc: BaseException, *, running: bool = True) -> str | None:
    """What to say when `exc` means the database could not be reached or refused the login; else None.
    `running`: the database may be a `cortex run`'s (not when it is `cortex run` that asks)."""
    if isinstance(exc, sqlalchemy.exc.DBAPIError):
        sqlstate = str(getattr(exc.orig, "sqlstate", "") or "")
        if not sqlstate.startswith(REFUSALS):
            return None
        reason = str(exc.orig)
    elif isinstance(exc, nats.errors.Error):  # its TimeoutError is one too: NATS's, not the database's
        return None
    elif isinstance(exc, (ConnectionError, socket.gaierror, TimeoutError)) or _no_socket(exc):
        reason = str(exc) or ("timed out" if isinstance(exc, TimeoutError) else type(exc).__name__)
    else:
        return None
    hint = "check DATABASE_URL, or that `cortex run` is running" if running else "check DATABASE_URL"
    return f"cannot connect to the database: {reason} ({hint})"


def nats_refusal(exc: BaseException, *, running: bool = True) -> str | None:
    """What to say when NATS failed the command midway (a timeout, the connection lost); else None."""
    if not isinstance(exc, nats.errors.Error):
        return None
    hint = "check NATS_URL, or that `cortex run` is running" if running else "check NATS_URL"
    return f"NATS did not answer: {exc} ({hint})"


def privilege_refusal(exc: BaseException) -> str | None:
    """What to say when the database user lacks a privilege a migration needs (SQLSTATE 42501); else None."""
    if not isinstance(exc, sqlalchemy.exc.DBAPIError) or getattr(exc.orig, "sqlstate", None) != "42501":
        return None
    reason = str(exc.orig).splitlines()[0].split(": ", 1)[-1]  # without asyncpg's `<class …>:` prefix
    return f"the database user lacks a privilege the migrations need: {reason} (see deploy/README.md, Migrations)"


def _no_socket(exc: BaseException) -> bool:
    """A Unix socket directory with no server in it (the embedded one stopped): asyncpg names no file,
    where a missing file or program elsewhere would be named."""
    return isinstance(exc, FileNotFoundError) and exc.filename is None
