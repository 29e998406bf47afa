"""Connecting to NATS with reconnects that never give up while the service runs."""

import logging

import nats
from nats.aio.client import Client as NATS

log = logging.getLogger(__name__)


async def connect(url: str, name: str) -> NATS:
    async def on_disconnect() -> None:
        log.info("disconnected from NATS")

    async def on_reconnect() -> None:
        log.info("reconnected to NATS")

    async def on_error(exc: Exception) -> None:
        log.warning("NATS error: %s", exc)

    return await nats.connect(
        url,
        name=name,
        max_reconnect_attempts=-1,
        reconnect_time_wait=1,
        disconnected_cb=on_disconnect,
        reconnected_cb=on_reconnect,
        error_cb=on_error,
    )


async def disconnect(nc: NATS) -> None:
    """Drain when connected; else close: nats-py refuses to drain while reconnecting, which would leave
    the client trying to reconnect for good."""
    if nc.is_connected:
        await nc.drain()
    else:
        await nc.close()
