"""A service told to stop while NATS cannot be reached yet stops at once, with exit code 0. Before (QA 28), its
first connect was tried for ever and SIGTERM or SIGINT waited on it: a stop took `kill -9`, or a whole grace
period. The gateway, whose connection is made in uvicorn's lifespan, also died of the SIGTERM it had handled."""

import os
import signal
import subprocess
import sys
import time

import pytest

from cortex_embedded_servers import free_port
from tests.infrastructure import Infrastructure

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("service", ["indexer", "aggregator", "gateway"])
def test_a_service_waiting_for_nats_stops_on_sigterm(migrated: Infrastructure, service: str) -> None:
    env = {
        **os.environ,
        "NATS_URL": f"nats://127.0.0.1:{free_port('127.0.0.1')}",  # nothing listens there
        "DATABASE_URL": migrated.app_database_url,
        "CORTEX_SECRET": "stop-test-secret-" + "x" * 32,
        "CORTEX_INDEXER_EMBEDDER": "none",
        "CORTEX_AGGREGATOR_EMBEDDER": "none",
        "CORTEX_GATEWAY_PORT": str(free_port("127.0.0.1")),
    }
    process = subprocess.Popen(
        [sys.executable, "-m", f"cortex_{service}"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        time.sleep(4)  # started, and trying to reach NATS
        assert process.poll() is None, process.communicate()[0]
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()

    assert process.returncode == 0, output
    assert "stopped while NATS at" in output
