"""The indexer as a real child process (`python -m cortex_indexer`, as `cortex run` starts it), to kill it.

It connects as the application role, like every service, and indexes lexical-only (no model to load).
Its output goes to a log file; `tail()` shows the end of it in a failing assertion.
"""

import os
import signal
import subprocess
import sys
from pathlib import Path

STOP_TIMEOUT_SECONDS = 15.0


class IndexerProcess:
    def __init__(self, database_url: str, nats_url: str, log_file: Path) -> None:
        self._env = {
            **os.environ,
            # The prefixed names win over DATABASE_URL/NATS_URL, so set both in case the caller has either.
            "DATABASE_URL": database_url,
            "NATS_URL": nats_url,
            "CORTEX_INDEXER_DATABASE_URL": database_url,
            "CORTEX_INDEXER_NATS_URL": nats_url,
            "CORTEX_INDEXER_EMBEDDER": "none",
            "CORTEX_INDEXER_TRACE_EXPORTER": "none",
            "PYTHONUNBUFFERED": "1",
        }
        self._log_file = log_file
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self._process is not None, "not started"
        return self._process.pid

    def start(self) -> None:
        assert self._process is None or self._process.poll() is not None, "already running"
        with self._log_file.open("ab") as log:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "cortex_indexer"],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self._env,
                start_new_session=True,
            )

    def exit_code(self) -> int | None:
        """None while it runs."""
        assert self._process is not None, "not started"
        return self._process.poll()

    def kill(self) -> int:
        """SIGKILL: no handler runs, nothing in flight is acked or rolled forward. Returns the exit code."""
        assert self._process is not None, "not started"
        os.kill(self._process.pid, signal.SIGKILL)
        return self._process.wait(STOP_TIMEOUT_SECONDS)

    def stop(self) -> None:
        """SIGTERM (finish what is in flight), SIGKILL if it does not end in time; nothing if not running."""
        if self._process is None or self._process.poll() is not None:
            return
        self._process.terminate()
        try:
            self._process.wait(STOP_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(STOP_TIMEOUT_SECONDS)

    def tail(self, lines: int = 40) -> str:
        try:
            text = self._log_file.read_text(errors="replace")
        except FileNotFoundError:
            return "(no output)"
        return "\n".join(text.splitlines()[-lines:])
