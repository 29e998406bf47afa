"""The CLI pointed at a database or NATS that does not answer: one line of error and exit code 1, within
seconds. Before: a traceback of some 130 lines, and `cortex ingest` waited for NATS without end."""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from cortex_embedded_servers import free_port
from tests.infrastructure import Infrastructure

pytestmark = pytest.mark.e2e

CORTEX = str(Path(sys.executable).with_name("cortex"))


def cortex(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "CORTEX_DATA_DIR": str(tmp_path), **env}
    return subprocess.run([CORTEX, *args], env=environment, capture_output=True, text=True, timeout=60, check=False)


def closed_port() -> int:
    return free_port("127.0.0.1")  # nothing listens there


def refusing_url(kind: str, owner: str) -> str:
    if kind == "nothing listens":
        return f"postgresql+asyncpg://cortex:secret@127.0.0.1:{closed_port()}/cortex"
    if kind == "stopped embedded server":  # what a stale runtime file points at
        return "postgresql+asyncpg://postgres:secret@/postgres?host=/nonexistent/cortex/pg"
    url = make_url(owner)
    if kind == "unknown role":
        url = url.set(username="nobody_here", password="secret")
    else:
        url = url.set(database="no_such_database")
    return url.render_as_string(hide_password=False)


@pytest.mark.parametrize(
    ("kind", "reason"),
    [
        ("nothing listens", "Connect call failed"),
        ("stopped embedded server", "No such file or directory"),
        ("unknown role", 'role "nobody_here" does not exist'),
        ("unknown database", 'database "no_such_database" does not exist'),
    ],
)
def test_a_database_that_refuses_is_one_line(kind: str, reason: str, migrated: Infrastructure, tmp_path: Path) -> None:
    given = refusing_url(kind, migrated.database_url)

    done = cortex(tmp_path, "token", "--org", "acme", "--user", "bob", DATABASE_URL=given, NATS_URL=migrated.nats_url)

    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("error: cannot connect to the database: ")
    assert reason in done.stderr
    assert "secret" not in done.stderr


def test_a_database_that_does_not_answer_is_one_line_after_its_connect_timeout(
    migrated: Infrastructure, tmp_path: Path
) -> None:
    """Before, asyncpg's own 60 s passed first (QA 46); 10 s when the URL names no connect_timeout."""
    with socket.socket() as frozen:  # accepts connections (the kernel does) and never answers
        frozen.bind(("127.0.0.1", 0))
        frozen.listen()
        given = f"postgresql://cortex:secret@127.0.0.1:{frozen.getsockname()[1]}/cortex?connect_timeout=1"
        started = time.monotonic()

        done = cortex(
            tmp_path, "token", "--org", "acme", "--user", "bob", DATABASE_URL=given, NATS_URL=migrated.nats_url
        )

    assert time.monotonic() - started < 20
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.startswith("error: cannot connect to the database: PostgreSQL did not answer within 1 s ("), (
        done.stderr
    )
    assert done.stderr.count("\n") == 1, done.stderr


def test_ingest_with_nats_down_fails_in_seconds(migrated: Infrastructure, tmp_path: Path) -> None:
    endpoints = {"DATABASE_URL": migrated.database_url, "NATS_URL": migrated.nats_url}
    made = cortex(tmp_path, "token", "--org", "unreachable-nats", "--user", "ann", "--create", **endpoints)
    assert made.returncode == 0, made.stderr
    note = tmp_path / "note.md"
    note.write_text("# Note\n\nNever published.\n")
    nats_url = f"nats://127.0.0.1:{closed_port()}"
    started = time.monotonic()

    done = cortex(tmp_path, "ingest", str(note), "--org", "unreachable-nats", **(endpoints | {"NATS_URL": nats_url}))

    assert time.monotonic() - started < 30
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"error: cannot reach NATS at {nats_url} (check NATS_URL, or that `cortex run` is running)\n"
