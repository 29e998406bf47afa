"""A service tells `cortex run` it got past its start-up checks, so the run says "running" only then.

The supervisor gives each service the write end of a pipe; the service writes one line once its settings
and plugin pins are accepted. Until every service has, a refusal (exit code CANNOT_START) may still come.
"""

import contextlib
import os

READY_ENV = "CORTEX_READY_FD"  # the write end's descriptor number in the service
READY = b"ready\n"


def report_ready() -> None:
    """In a service: say so to the supervisor, once. Nothing without a supervisor."""
    given = os.environ.pop(READY_ENV, None)
    if not given:
        return
    with contextlib.suppress(OSError, ValueError):  # a supervisor gone: nobody to tell
        descriptor = int(given)
        try:
            os.write(descriptor, READY)
        finally:
            os.close(descriptor)
