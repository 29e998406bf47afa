"""How a service process runs: until SIGINT, SIGTERM or its supervisor's end, then says how it ended."""

import asyncio
import logging
import signal
from collections.abc import Callable
from typing import Protocol

from cortex_supervision.lifeline import watch_lifeline

log = logging.getLogger(__name__)

# The exit code of a service that cannot run with its configuration: restarting it would fail the same way.
CANNOT_START = 2


class CannotStart(Exception):
    """The configuration cannot work (a pinned plugin that is not installed, settings missing): say why, in
    one line, and exit with CANNOT_START."""


class Service(Protocol):
    stop: asyncio.Event
    lost: bool  # stopped because its NATS client closed for good

    async def run(self) -> None: ...


async def run_until_stopped(build: Callable[[], Service]) -> int:
    """The exit code: CANNOT_START when `build` refuses the configuration, 1 when NATS was lost (its
    supervisor restarts it), else 0."""
    try:
        service = build()
    except CannotStart as exc:
        log.error("cannot start: %s", exc)  # noqa: TRY400 - one line that says why, no traceback
        return CANNOT_START
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, service.stop.set)
    watch_lifeline()  # after the handlers: the SIGTERM it sends is a clean stop
    await service.run()
    return 1 if service.lost else 0
