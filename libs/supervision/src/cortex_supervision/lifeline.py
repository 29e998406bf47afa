"""A service started by `cortex run` ends when its supervisor does, however the supervisor ends.

A supervisor that is killed (SIGKILL, the out-of-memory killer, a closed terminal) cannot stop its
services. Left running, they held the gateway's port and kept retrying NATS and PostgreSQL, and the next
`cortex run` on the same data failed to start. So the supervisor gives each service the read end of a
pipe whose write end only it holds: the kernel closes that end when the supervisor dies, the service
reads end-of-file, and stops itself as if it had been sent SIGTERM (a clean stop).
"""

import os
import signal
import threading
from collections.abc import Mapping

LIFELINE_ENV = "CORTEX_LIFELINE_FD"  # the read end's descriptor number in the service


def watch_lifeline(environ: Mapping[str, str] = os.environ) -> None:
    """In a service: SIGTERM to itself once its supervisor is gone. Nothing without a supervisor."""
    given = environ.get(LIFELINE_ENV)
    if not given:
        return
    descriptor = int(given)

    def wait() -> None:
        while os.read(descriptor, 1):  # the supervisor never writes: this returns only at its end
            pass
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=wait, name="lifeline", daemon=True).start()
