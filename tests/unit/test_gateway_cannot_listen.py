"""A gateway that cannot listen where it is told stops at once with one line and exit code 2 (a setting to fix),
before it reports ready. Before: uvicorn's exit code 3 after the lifespan had connected, which `cortex run` and
other supervisors restarted, each time the same way."""

import os
import socket
import subprocess
import sys

import pytest

from cortex_embedded_servers import free_port


def start_gateway(host: str, port: int) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "CORTEX_GATEWAY_HOST": host,
        "CORTEX_GATEWAY_PORT": str(port),
        "DATABASE_URL": "postgresql://cortex@127.0.0.1:1/cortex",  # never reached
        "CORTEX_SECRET": "listen-test-secret-" + "x" * 32,
    }
    return subprocess.run(
        [sys.executable, "-m", "cortex_gateway"], env=env, capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.parametrize(
    ("host", "why"),
    [("no-such-host.invalid", "Name or service not known"), ("192.0.2.1", "Cannot assign requested address")],
)
def test_a_host_it_cannot_listen_on_is_a_refusal(host: str, why: str) -> None:
    done = start_gateway(host, free_port("127.0.0.1"))

    assert done.returncode == 2, done.stderr
    assert f"cannot start: cannot listen on {host}:" in done.stderr
    assert why in done.stderr
    assert "Traceback" not in done.stderr


def test_a_port_in_use_is_a_refusal() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = start_gateway("127.0.0.1", port)

    assert done.returncode == 2, done.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr
    assert "Address already in use" in done.stderr
