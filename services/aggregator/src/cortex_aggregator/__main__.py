"""`python -m cortex_aggregator`: run one copy of the aggregator until SIGINT/SIGTERM."""

import sys

import uvloop

from cortex_aggregator.bootstrap import build
from cortex_aggregator.settings import AggregatorSettings
from cortex_supervision.service_run import run_until_stopped, settings_or_exit
from cortex_telemetry.logs import configure_logging
from cortex_telemetry.tracing import configure_tracing


async def main() -> int:
    # Filled from the environment; cortex run reads the number of copies.
    settings = settings_or_exit(AggregatorSettings, "cortex-aggregator", frozenset({"CORTEX_AGGREGATOR_COPIES"}))
    configure_logging(settings.log_level)
    provider = configure_tracing("cortex-aggregator", settings.trace_exporter, settings.otlp_endpoint)
    try:
        return await run_until_stopped(lambda: build(settings))
    finally:
        provider.shutdown()


if __name__ == "__main__":
    sys.exit(uvloop.run(main()))  # asyncpg and nats-py spend markedly less CPU per message on it
