"""One `cortex run` per data directory.

A second run on the same directory would take the first one's servers for leftovers of a killed run: it
stopped the first one's NATS, attached to its PostgreSQL and stopped that on its way out, and removed the
runtime file the CLI finds Cortex by. The lock is an flock, so the kernel drops it when its holders die,
however they die. Its holders are every process of the run: the supervisor, and the services, which
inherit its descriptor. After them the run's warden (`cortex_cli.warden`) takes it to stop the embedded
servers a killed run left. A run started while a killed run's services and warden finish waits for them
instead of refusing.
"""

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOCK_FILE = "run.lock"
STOPPING = "stopping"  # written beside the warden's pid while it stops a killed run's servers
STOPPING_WAIT_SECONDS = 90.0  # PostgreSQL's fast shutdown (pg_ctl waits up to 60 s) and NATS' (10 s)


class AlreadyRunning(RuntimeError):
    pass


def _holder(descriptor: int) -> str:
    return os.pread(descriptor, 64, 0).decode(errors="replace").strip() or "unknown"


def mark_held(descriptor: int, *, stopping: bool = False) -> None:
    os.ftruncate(descriptor, 0)
    os.pwrite(descriptor, f"{os.getpid()}{' ' + STOPPING if stopping else ''}\n".encode(), 0)


def _ending(holder: str) -> bool:
    """Whether the run holding the lock is on its way out: its warden at work, or its supervisor gone
    while its services stop (they hold the lock too)."""
    if holder.endswith(STOPPING):
        return True
    try:
        os.kill(int(holder), 0)
    except ProcessLookupError:
        return True
    except (ValueError, PermissionError):  # no pid written yet; a live process of another user
        pass
    return False


def _lock_unless_running(descriptor: int, directory: Path) -> None:
    deadline = time.monotonic() + STOPPING_WAIT_SECONDS
    while True:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(descriptor)
            if not _ending(holder) or time.monotonic() > deadline:
                pid = holder.removesuffix(STOPPING).strip()
                raise AlreadyRunning(
                    f"Cortex is already running on {directory} (pid {pid}): stop that one first, "
                    "or give this one another CORTEX_DATA_DIR."
                ) from None
            time.sleep(0.2)
        else:
            return


@contextmanager
def holding_run_lock(directory: Path) -> Iterator[int]:
    """Hold the run lock; yields its descriptor, for the run's services to inherit."""
    directory.mkdir(parents=True, exist_ok=True)
    # Not inherited by what is started meanwhile unless passed on (Python's descriptors close on exec).
    descriptor = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        _lock_unless_running(descriptor, directory)
        mark_held(descriptor)
        yield descriptor
    finally:
        os.close(descriptor)
