"""`python -m cortex_gateway`: serve the HTTP API with uvicorn until SIGINT/SIGTERM, or until its NATS
client closes for good (exit code 1, for its supervisor to restart it)."""

import logging
import signal
import sys
from types import FrameType

import uvicorn
from uvicorn.config import STARTUP_FAILURE

from cortex_gateway.app import create_app
from cortex_gateway.http_protocol import ProblemHttpProtocol
from cortex_gateway.listen import listen_refusal
from cortex_gateway.settings import GatewaySettings
from cortex_plugins.registry import PluginRegistry
from cortex_supervision.lifeline import watch_lifeline
from cortex_supervision.readiness import report_ready
from cortex_supervision.service_run import CANNOT_START, settings_or_exit
from cortex_telemetry.logs import configure_logging
from cortex_telemetry.tracing import configure_tracing

log = logging.getLogger("cortex_gateway")


def _stopped(signum: int, frame: FrameType | None) -> None:
    """SIGTERM outside uvicorn's serving: before it, the end; after its clean stop (uvicorn sends the signal it
    caught to this handler again), exit 0 rather than die of the signal, with the traces flushed on the way."""
    raise SystemExit(0)


def main() -> int:
    settings = settings_or_exit(GatewaySettings, "cortex-gateway")  # filled from the environment
    configure_logging(settings.log_level)
    refusals = PluginRegistry.from_environment().pin_refusals()  # as the indexer and aggregator refuse
    if problem := listen_refusal(settings.host, settings.port):
        refusals.append(problem)
    if refusals:
        log.error("cannot start: %s", "; ".join(refusals))
        return CANNOT_START
    report_ready()  # its checks passed; `cortex run` also waits for /readyz before it says "running"
    provider = configure_tracing("cortex-gateway", settings.trace_exporter, settings.otlp_endpoint)
    nats_lost = False

    def stop_serving() -> None:
        nonlocal nats_lost
        nats_lost = True
        server.should_exit = True  # as on SIGTERM: requests in flight are answered first

    server = uvicorn.Server(
        uvicorn.Config(
            create_app(settings, on_nats_lost=stop_serving, stopping=lambda: server.should_exit),
            host=settings.host,
            port=settings.port,
            log_config=None,
            access_log=False,
            log_level=settings.log_level.lower(),
            loop="uvloop",  # with httptools: less CPU per request than asyncio's loop and h11
            http=ProblemHttpProtocol,  # httptools, with unparsable requests answered as problems
        )
    )
    signal.signal(signal.SIGTERM, _stopped)
    watch_lifeline()  # its SIGTERM is uvicorn's clean stop (a signal before uvicorn starts ends it at once)
    try:
        server.run()
    except KeyboardInterrupt:
        pass
    finally:
        provider.shutdown()
    if not server.started:
        return STARTUP_FAILURE  # as uvicorn.run does: the lifespan failed (it logged why)
    return 1 if nats_lost else 0


if __name__ == "__main__":
    sys.exit(main())
