"""Connecting to NATS with reconnects that never give up while the service runs.

Reconnecting covers a server that restarts or a network that drops. It does not cover an `-ERR` from
the server (anything but a stale connection, a permissions or an authorization error): nats-py then
closes the client for good, and drops its subscriptions. A service left with such a client answers
nothing until it is restarted, so it is told (`on_lost`) and stops, for its supervisor to restart it.
"""

import asyncio
import contextlib
import logging
import weakref
from collections.abc import Callable

import nats
from nats.aio.client import Client as NATS
from nats.errors import ConnectionReconnectingError

log = logging.getLogger(__name__)

_closed_on_purpose: "weakref.WeakSet[NATS]" = weakref.WeakSet()  # by `disconnect`


class StoppedBeforeConnected(Exception):
    """The service was told to stop while NATS could not be reached yet."""


async def connect(
    url: str, name: str, on_lost: Callable[[], None] | None = None, *, stop: asyncio.Event | None = None
) -> NATS:
    """`on_lost`: called if the client closes without `disconnect` (see the module docstring). `stop`: set
    while the first connection is still being tried (the server not up), it ends the trying with
    StoppedBeforeConnected. Before, a service asked to stop then waited for NATS for ever."""
    client: list[NATS] = []  # the callbacks are given before the client exists

    async def on_disconnect() -> None:
        log.info("disconnected from NATS")

    async def on_reconnect() -> None:
        log.info("reconnected to NATS")

    async def on_error(exc: Exception) -> None:
        log.warning("NATS error: %s", exc)

    async def on_closed() -> None:
        if not client or client[0] in _closed_on_purpose:
            return
        log.error("the NATS client closed for good (last error: %s)", client[0].last_error)
        if on_lost is not None:
            on_lost()

    connecting = asyncio.ensure_future(
        nats.connect(
            url,
            name=name,
            max_reconnect_attempts=-1,
            reconnect_time_wait=1,
            disconnected_cb=on_disconnect,
            reconnected_cb=on_reconnect,
            error_cb=on_error,
            closed_cb=on_closed,
        )
    )
    if stop is not None:
        stopping = asyncio.ensure_future(stop.wait())
        await asyncio.wait({connecting, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if not connecting.done():
            connecting.cancel()
            with contextlib.suppress(BaseException):
                await connecting
            raise StoppedBeforeConnected(f"stopped while NATS at {url} could not be reached")
    nc = await connecting
    client.append(nc)
    return nc


async def disconnect(nc: NATS) -> None:
    """Drain when connected; else close: nats-py refuses to drain while reconnecting, which would leave
    the client trying to reconnect for good."""
    _closed_on_purpose.add(nc)
    try:
        if nc.is_connected:
            await nc.drain()
        else:
            await nc.close()
    except (RuntimeError, OSError) as exc:  # the transport already gone (uvloop's "handler is closed")
        log.warning("closing the NATS client: %s", exc)


def refuse_while_reconnecting(nc: NATS) -> None:
    """Raise ConnectionReconnectingError at once while the server is unreachable: nats-py would hold a
    request or publish in its buffer until the caller's timeout, which then reads as a slow service."""
    if nc.is_reconnecting:
        raise ConnectionReconnectingError
