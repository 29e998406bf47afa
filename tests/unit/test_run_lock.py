"""The run lock: a second run refuses while a run holds it, and waits while a warden stops a killed run's
servers (`cortex_cli.warden` marks the lock `stopping`)."""

import fcntl
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from cortex_cli.run_lock import LOCK_FILE, AlreadyRunning, holding_run_lock, mark_held


def hold(directory: Path, *, stopping: bool = False, pid: int | None = None) -> int:
    """The lock taken through another open file, as another process would (flock locks conflict per open file)."""
    descriptor = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    mark_held(descriptor, stopping=stopping)
    if pid is not None:
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, f"{pid}\n".encode(), 0)
    return descriptor


def a_pid_that_ended() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_a_run_holding_the_lock_is_refused_at_once(tmp_path: Path) -> None:
    held = hold(tmp_path)
    try:
        started = time.monotonic()
        refused = rf"already running on {tmp_path} \(pid {os.getpid()}\)"
        with pytest.raises(AlreadyRunning, match=refused), holding_run_lock(tmp_path):
            pass
        assert time.monotonic() - started < 1
    finally:
        os.close(held)


def test_a_run_waits_while_a_warden_stops_the_last_ones_servers(tmp_path: Path) -> None:
    held = hold(tmp_path, stopping=True)
    threading.Timer(0.5, os.close, args=(held,)).start()  # the warden done
    with holding_run_lock(tmp_path) as descriptor:
        assert os.pread(descriptor, 64, 0).decode() == f"{os.getpid()}\n"


def test_a_run_waits_while_the_services_of_a_killed_supervisor_stop(tmp_path: Path) -> None:
    held = hold(tmp_path, pid=a_pid_that_ended())  # the supervisor named in the lock is gone; its services hold it
    threading.Timer(0.5, os.close, args=(held,)).start()  # the last service ended
    with holding_run_lock(tmp_path) as descriptor:
        assert os.pread(descriptor, 64, 0).decode() == f"{os.getpid()}\n"
