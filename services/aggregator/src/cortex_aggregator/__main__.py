"""`python -m cortex_aggregator`: run one copy of the aggregator until SIGINT/SIGTERM."""

import asyncio
import signal
import sys

import uvloop

from cortex_aggregator.bootstrap import build
from cortex_aggregator.settings import AggregatorSettings
from cortex_supervision.lifeline import watch_lifeline
from cortex_telemetry.logs import configure_logging
from cortex_telemetry.tracing import configure_tracing


async def main() -> int:
    settings = AggregatorSettings()  # filled from the environment
    configure_logging(settings.log_level)
    provider = configure_tracing("cortex-aggregator", settings.trace_exporter, settings.otlp_endpoint)
    service = build(settings)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, service.stop.set)
    watch_lifeline()  # after the handlers: the SIGTERM it sends is a clean stop
    try:
        await service.run()
    finally:
        provider.shutdown()
    return 1 if service.lost else 0  # non-zero: its supervisor restarts it


if __name__ == "__main__":
    sys.exit(uvloop.run(main()))  # asyncpg and nats-py spend markedly less CPU per message on it
