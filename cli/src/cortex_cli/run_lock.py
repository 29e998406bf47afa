"""One `cortex run` per data directory.

A second run on the same directory would take the first one's servers for leftovers of a killed run: it
stopped the first one's NATS, attached to its PostgreSQL and stopped that on its way out, and removed the
runtime file the CLI finds Cortex by. The lock is an flock, so the kernel drops it when its holder dies,
however it dies: a killed run leaves nothing that blocks the next one.
"""

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOCK_FILE = "run.lock"


class AlreadyRunning(RuntimeError):
    pass


@contextmanager
def holding_run_lock(directory: Path) -> Iterator[None]:
    directory.mkdir(parents=True, exist_ok=True)
    # Not inherited by the services and servers started meanwhile (Python's descriptors close on exec).
    descriptor = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(descriptor, 32, 0).decode(errors="replace").strip() or "unknown"
            raise AlreadyRunning(
                f"Cortex is already running on {directory} (pid {holder}): stop that one first, "
                "or give this one another CORTEX_DATA_DIR."
            ) from None
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(descriptor)
