"""PostgreSQL 16 with pgvector from the ``pgserver`` package, kept in one data directory.

pgserver listens on a unix socket only. The socket lives in the data directory, or, when that
path is too long for a unix socket (about 100 bytes), in a short per-data-directory folder under
the user's runtime directory (``$XDG_RUNTIME_DIR`` or ``/tmp/runtime-<uid>``) that pgserver
picks. The URL this module returns names whichever directory the server really uses.

Run as root, pgserver initialises and runs the server as the system user ``pgserver`` (creating
it if needed), owns the data directory to it and opens read/traverse permissions on the
directories above it.
"""

import atexit
import contextlib
import logging
import os
import shutil
import subprocess
import warnings
from pathlib import Path
from urllib.parse import quote

import psutil

with warnings.catch_warnings():
    # platformdirs warns at import when XDG_RUNTIME_DIR is unset; the fallback is fine.
    warnings.simplefilter("ignore")
    from pgserver._commands import POSTGRES_BIN_PATH
    from pgserver.postgres_server import PostgresServer, get_server

_logger = logging.getLogger(__name__)

BIN_DIR: Path = POSTGRES_BIN_PATH  # PostgreSQL's programs: postgres, pg_ctl, psql, pg_dump...
_SERVER_SYSTEM_USER = "pgserver"
_STOP_TIMEOUT_SECONDS = 60.0


def _run_as() -> str | None:
    """The system user pgserver runs PostgreSQL as (PostgreSQL refuses to run as root)."""
    return _SERVER_SYSTEM_USER if os.name == "posix" and os.geteuid() == 0 else None


def _server_process(data_dir: Path) -> psutil.Process | None:
    """The live PostgreSQL process that ``data_dir/postmaster.pid`` names, if any.

    Read by hand rather than with pgserver's parser, which fails on a file still being written
    or written by a single-user backend (its pid is negative then).
    """
    try:
        first_line = (data_dir / "postmaster.pid").read_text().split("\n", 1)[0]
        process = psutil.Process(abs(int(first_line)))
        if process.status() != psutil.STATUS_ZOMBIE and process.name().startswith("postgres"):
            return process
    except (OSError, ValueError, psutil.Error):
        pass
    return None


def _discard_stale_pid_file(data_dir: Path) -> None:
    """Remove a ``postmaster.pid`` that names no running server, with the socket's lock file it wrote.

    After a crash or reboot the pid can be reused; pgserver would then think the server runs,
    and PostgreSQL would refuse to start while the file names a live process. Right after a
    ``kill -9`` the dead postmaster is a zombie until its parent (often init) reaps it, and
    PostgreSQL counts a zombie as alive: the socket's lock file naming it stopped the restart
    ("lock file .s.PGSQL.5432.lock already exists").
    """
    pid_file = data_dir / "postmaster.pid"
    if not pid_file.is_file() or _server_process(data_dir) is not None:
        return
    with contextlib.suppress(OSError, IndexError):
        pid, _, _, port, socket_dir = pid_file.read_text().splitlines()[:5]
        socket_lock = Path(socket_dir) / f".s.PGSQL.{port}.lock"
        if socket_lock.read_text().split("\n", 1)[0].strip() == pid.strip():
            _logger.info("removing stale %s", socket_lock)
            socket_lock.unlink()
    _logger.info("removing stale %s", pid_file)
    pid_file.unlink(missing_ok=True)


def _end_orphans(data_dir: Path) -> None:
    """End PostgreSQL processes left on ``data_dir`` by a postmaster that died (``kill -9``, the OOM killer).

    A backend busy in a query notices its postmaster's death only at its next wait, and while it lives it
    holds the old shared memory: a new server then refuses to start ("pre-existing shared memory block is
    still in use"). Those processes are doomed anyway, and their work was never committed.
    """
    orphans = []
    for process in psutil.process_iter(["name"]):
        with contextlib.suppress(psutil.Error, OSError):
            if (process.info["name"] or "").startswith("postgres") and Path(process.cwd()) == data_dir:
                orphans.append(process)
    if not orphans:
        return
    _logger.warning("ending %d PostgreSQL processes left by a server that died on %s", len(orphans), data_dir)
    for process in orphans:
        with contextlib.suppress(psutil.Error):
            process.terminate()
    _, alive = psutil.wait_procs(orphans, timeout=5)
    for process in alive:
        with contextlib.suppress(psutil.Error):
            process.kill()
    psutil.wait_procs(alive, timeout=5)


def _stop_server(data_dir: Path) -> bool:
    """Stop the server running on ``data_dir`` with ``pg_ctl stop -m fast``, else by signals; False if none ran."""
    process = _server_process(data_dir)
    if process is None:
        return False
    try:
        subprocess.run(  # noqa: S603 - fixed binary, no shell
            [
                str(POSTGRES_BIN_PATH / "pg_ctl"),
                "--pgdata",
                str(data_dir),
                "--mode=fast",
                "--wait",
                f"--timeout={int(_STOP_TIMEOUT_SECONDS)}",
                "stop",
            ],
            check=True,
            capture_output=True,
            user=_run_as(),
            cwd=data_dir,
            timeout=_STOP_TIMEOUT_SECONDS + 5,
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as err:
        _logger.warning("pg_ctl stop failed (%s); terminating PostgreSQL", err)
        process.terminate()
        try:
            process.wait(10)
        except psutil.TimeoutExpired:
            process.kill()
    return True


def _forget_handle(data_dir: Path) -> None:
    """Drop pgserver's per-process handle for ``data_dir`` and its pid refcount entry.

    pgserver caches one handle per data directory in the process, counts the processes using
    a server in ``.handle_pids.json`` and stops the server at exit when the last one leaves.
    This module stops the server itself, so that bookkeeping must not outlive ``stop()``.
    """
    with PostgresServer._lock:
        server = PostgresServer._instances.pop(data_dir, None)
        if server is None:
            return
        atexit.unregister(server._cleanup)
        server.global_process_id_list.get_and_remove(os.getpid())


def _create_vector_extension(socket_dir: Path, port: int) -> None:
    subprocess.run(  # noqa: S603 - fixed binary, no shell
        [
            str(POSTGRES_BIN_PATH / "psql"),
            "--no-psqlrc",
            "--quiet",
            "--set=ON_ERROR_STOP=1",
            f"--host={socket_dir}",
            f"--port={port}",
            "--username=postgres",
            "--dbname=postgres",
            "--command=CREATE EXTENSION IF NOT EXISTS vector",
        ],
        check=True,
        capture_output=True,
        timeout=30,
    )


def _initialize(data_dir: Path) -> None:
    """Create a new data directory atomically: initdb in a sibling folder, then rename it.

    An initdb cut short (Ctrl-C, a killed process) leaves a folder PostgreSQL cannot use; this
    way it is only ever the staging folder, which the next attempt deletes.
    """
    staging = data_dir.with_name(f".{data_dir.name}.initdb")
    if staging.exists():
        _stop_server(staging)
        shutil.rmtree(staging)
    if data_dir.exists() and any(data_dir.iterdir()):
        msg = f"{data_dir} is not empty but holds no PostgreSQL data (no PG_VERSION)"
        raise RuntimeError(msg)
    _logger.info("creating a PostgreSQL data directory in %s", data_dir)
    get_server(staging, cleanup_mode=None)  # pgserver's initdb comes with a start
    _forget_handle(staging)
    _stop_server(staging)
    if data_dir.exists():
        data_dir.rmdir()
    staging.rename(data_dir)


class EmbeddedPostgres:
    """A PostgreSQL server with its data in ``data_dir``: created on first start, reused later."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir.expanduser().resolve()
        self._url: str | None = None
        self._postmaster: psutil.Process | None = None  # the one started or found, for `running`

    @property
    def url(self) -> str | None:
        """The SQLAlchemy async URL while started, else None."""
        return self._url

    @property
    def log_file(self) -> Path:
        """PostgreSQL's server log."""
        return self.data_dir / "log"

    def running(self) -> bool:
        """Whether a server runs on this data directory. The postmaster's pid holds for its whole life, so
        the pid file is read only once it has ended: a file caught half-rewritten must not read as a crash."""
        known = self._postmaster
        with contextlib.suppress(psutil.Error):
            if known is not None and known.is_running() and known.status() != psutil.STATUS_ZOMBIE:
                return True
        self._postmaster = _server_process(self.data_dir)
        return self._postmaster is not None

    def start(self) -> str:
        """Start the server (or reuse the one already running on ``data_dir``); return its URL.

        The URL has the form ``postgresql+asyncpg://postgres@/postgres?host=<socket dir>``.
        The ``vector`` extension exists in the ``postgres`` database when this returns.
        """
        if self._url is not None and _server_process(self.data_dir) is not None:
            return self._url
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        if _server_process(self.data_dir) is None:
            # A cached handle for a server that has since stopped would be returned as is.
            _forget_handle(self.data_dir)
            _end_orphans(self.data_dir)
            _discard_stale_pid_file(self.data_dir)
            if not (self.data_dir / "PG_VERSION").is_file():
                _initialize(self.data_dir)
        info = get_server(self.data_dir, cleanup_mode=None).get_postmaster_info()
        atexit.register(self.stop)
        if info.socket_dir is None:
            msg = f"PostgreSQL in {self.data_dir} listens on no unix socket"
            raise RuntimeError(msg)
        _create_vector_extension(info.socket_dir, info.port or 5432)
        self._url = f"postgresql+asyncpg://postgres@/postgres?host={quote(str(info.socket_dir), safe='/')}"
        self._postmaster = _server_process(self.data_dir)
        _logger.info("PostgreSQL running on %s (data in %s)", info.socket_dir, self.data_dir)
        return self._url

    def stop(self) -> None:
        """Stop the server running on ``data_dir`` (``pg_ctl stop -m fast``); no-op if none runs."""
        atexit.unregister(self.stop)
        self._url = None
        self._postmaster = None
        _forget_handle(self.data_dir)
        if _stop_server(self.data_dir):
            _logger.info("PostgreSQL stopped (data in %s)", self.data_dir)
