"""How a service process runs: until SIGINT, SIGTERM or its supervisor's end, then says how it ended."""

import asyncio
import signal
from typing import Protocol

from cortex_supervision.lifeline import watch_lifeline


class Service(Protocol):
    stop: asyncio.Event
    lost: bool  # stopped because its NATS client closed for good

    async def run(self) -> None: ...


async def run_until_stopped(service: Service) -> int:
    """The exit code: 1 when NATS was lost (its supervisor restarts it), else 0."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, service.stop.set)
    watch_lifeline()  # after the handlers: the SIGTERM it sends is a clean stop
    await service.run()
    return 1 if service.lost else 0
