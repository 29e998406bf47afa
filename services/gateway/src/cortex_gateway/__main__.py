"""`python -m cortex_gateway`: serve the HTTP API with uvicorn until SIGINT/SIGTERM."""

import uvicorn

from cortex_gateway.app import create_app
from cortex_gateway.settings import GatewaySettings
from cortex_supervision.lifeline import watch_lifeline
from cortex_telemetry.logs import configure_logging
from cortex_telemetry.tracing import configure_tracing


def main() -> None:
    settings = GatewaySettings()  # filled from the environment
    configure_logging(settings.log_level)
    provider = configure_tracing("cortex-gateway", settings.trace_exporter, settings.otlp_endpoint)
    watch_lifeline()  # its SIGTERM is uvicorn's clean stop (a signal before uvicorn starts ends it at once)
    try:
        uvicorn.run(
            create_app(settings),
            host=settings.host,
            port=settings.port,
            log_config=None,
            access_log=False,
            log_level=settings.log_level.lower(),
            loop="uvloop",  # with httptools: less CPU per request than asyncio's loop and h11
            http="httptools",
        )
    finally:
        provider.shutdown()


if __name__ == "__main__":
    main()
