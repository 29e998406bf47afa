"""`python -m cortex_indexer`: run one copy of the indexer until SIGINT/SIGTERM."""

import sys

import uvloop

from cortex_indexer.bootstrap import build
from cortex_indexer.settings import IndexerSettings
from cortex_supervision.service_run import run_until_stopped, settings_or_exit
from cortex_telemetry.logs import configure_logging
from cortex_telemetry.tracing import configure_tracing


async def main() -> int:
    settings = settings_or_exit(IndexerSettings, "cortex-indexer")  # filled from the environment
    configure_logging(settings.log_level)
    provider = configure_tracing("cortex-indexer", settings.trace_exporter, settings.otlp_endpoint)
    try:
        return await run_until_stopped(lambda: build(settings))
    finally:
        provider.shutdown()


if __name__ == "__main__":
    sys.exit(uvloop.run(main()))  # asyncpg and nats-py spend markedly less CPU per message on it
