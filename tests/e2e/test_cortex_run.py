"""`cortex run` (what `make run` starts) as the README's "try it" uses it: embedded PostgreSQL and NATS,
every service in its own process (here two aggregator copies), a document ingested with the CLI and found
over HTTP. A second run beside it refuses; a service or NATS killed under it is restarted; killed itself, it leaves no
service nor server behind, and the next run starts on the same data; SIGINT stops that one and everything
with exit code 0."""

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from cortex_embedded_servers import free_port

pytestmark = pytest.mark.e2e

CORTEX = str(Path(sys.executable).with_name("cortex"))
START_SECONDS = 180  # PostgreSQL, migrations, and three or four processes loading their model on 2 cores
STOP_SECONDS = 60


def run_env(data_dir: Path, port: int) -> dict[str, str]:
    env = {**os.environ, "CORTEX_DATA_DIR": str(data_dir), "CORTEX_GATEWAY_PORT": str(port)}
    for variable in ("DATABASE_URL", "NATS_URL", "CORTEX_SECRET", "CORTEX_AGGREGATOR_COPIES"):  # its own set-up
        env.pop(variable, None)
    return env


@contextmanager
def cortex_run(
    data_dir: Path, port: int, log: Path, *args: str, given: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """`cortex run ARGS` (with the `given` variables) until its gateway is ready; stopped with SIGINT on exit,
    which must end it cleanly (unless the test ended it itself)."""
    env = run_env(data_dir, port) | (given or {})
    with log.open("wb") as output:
        process = subprocess.Popen([CORTEX, "run", *args], env=env, stdout=output, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + START_SECONDS
        while not ready(port):
            assert process.poll() is None, f"cortex run exited early:\n{log.read_text()}"
            assert time.monotonic() < deadline, f"not ready after {START_SECONDS} s:\n{log.read_text()}"
            time.sleep(0.5)
        yield process
    finally:
        ended_by_the_test = process.poll() is not None
        if not ended_by_the_test:
            process.send_signal(signal.SIGINT)
            try:
                code = process.wait(STOP_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                raise
    if ended_by_the_test:
        return
    assert code == 0, log.read_text()
    output_lines = log.read_text()
    assert "PostgreSQL stopped" in output_lines and "NATS stopped" in output_lines, output_lines


def services_of(pid: int) -> set[int]:
    """The service processes `cortex run` (process `pid`) started: its children running `-m cortex_…`
    (from /proc; in `stat`, the parent's pid is the second field after the command name)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            command = (stat.parent / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue  # ended meanwhile
        service = any(part.startswith(b"cortex_") for part in command) and b"cortex_cli.warden" not in command
        if parent == pid and b"-m" in command and service:
            found.add(int(stat.parent.name))
    return found


def indexer_of(pid: int) -> int | None:
    """The indexer `cortex run` (process `pid`) runs, if one runs now."""
    for service in services_of(pid):
        try:
            if b"cortex_indexer" in Path(f"/proc/{service}/cmdline").read_bytes().split(b"\0"):
                return service
        except OSError:
            continue  # ended meanwhile
    return None


def restarted_indexer(pid: int, killed: int, seconds: float) -> int | None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        indexer = indexer_of(pid)
        if indexer not in (None, killed):
            return indexer
        time.sleep(0.2)
    return None


def pid_in(pid_file: Path) -> int:
    return int(pid_file.read_text().split()[0])


def all_ended(pids: set[int], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while any(Path(f"/proc/{pid}").exists() for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def ready(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200
    except httpx.TransportError:
        return False


def cli(data_dir: Path, *args: str) -> str:
    env = {**os.environ, "CORTEX_DATA_DIR": str(data_dir)}
    for variable in ("DATABASE_URL", "NATS_URL", "CORTEX_SECRET"):
        env.pop(variable, None)
    done = subprocess.run([CORTEX, *args], env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def search(port: int, token: str, q: str, *, unavailable_is_empty: bool = False) -> list[str]:
    """`unavailable_is_empty`: a 503 (the gateway reconnecting to a restarted NATS says so) finds nothing yet."""
    headers = {"Authorization": f"Bearer {token}", "X-Scope-Slug": "acme"}
    response = httpx.get(f"http://127.0.0.1:{port}/api/memory", params={"q": q}, headers=headers, timeout=30)
    if unavailable_is_empty and response.status_code == 503:
        return []
    assert response.status_code == 200, response.text
    return [item["title"] for item in response.json()["items"]]


def found_eventually(port: int, token: str, q: str, title: str) -> bool:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if title in search(port, token, q, unavailable_is_empty=True):
            return True
        time.sleep(0.3)
    return False


def test_run_ingest_search_stop_and_run_again_on_the_same_data(tmp_path: Path) -> None:
    data_dir, port = tmp_path / "cortex-data", free_port("127.0.0.1")
    note = tmp_path / "pricing.md"
    note.write_text("# Pricing policy\n\nEnterprise renewals get a tiered volume discount.\n")

    with cortex_run(data_dir, port, tmp_path / "first.log", "--aggregators", "2") as first:
        token = cli(data_dir, "token", "--org", "acme", "--user", "alice", "--role", "admin", "--create")
        token = token.strip().splitlines()[-1]
        cli(data_dir, "ingest", str(note), "--org", "acme")
        assert found_eventually(port, token, "volume discount", "Pricing policy")
        # A second run on the same data refuses at once. Before, it stopped this run's NATS and PostgreSQL.
        second = subprocess.run(
            [CORTEX, "run"], env=run_env(data_dir, port), capture_output=True, text=True, timeout=60, check=False
        )
        assert (second.returncode, second.stdout) == (1, ""), second.stdout + second.stderr
        assert f"Cortex is already running on {data_dir} (pid {first.pid})" in second.stderr
        cli(data_dir, "token", "--org", "acme", "--user", "alice")  # the CLI still finds this run
        # A service that dies is restarted, and the run goes on. Before, its death stopped everything.
        indexer = indexer_of(first.pid)
        assert indexer is not None
        os.kill(indexer, signal.SIGKILL)
        assert restarted_indexer(first.pid, indexer, 30) is not None, (tmp_path / "first.log").read_text()
        second_note = tmp_path / "travel.md"
        second_note.write_text("# Travel policy\n\nBook economy class for flights under six hours.\n")
        cli(data_dir, "ingest", str(second_note), "--org", "acme")
        assert found_eventually(port, token, "economy class flights", "Travel policy")
        # So is the embedded NATS (the services reconnect to it). Before, the run went on without it for good.
        os.kill(pid_in(data_dir / "nats" / "nats.pid"), signal.SIGKILL)
        third_note = tmp_path / "expenses.md"
        third_note.write_text("# Expense reports\n\nReceipts are due within thirty days of travel.\n")
        deadline = time.monotonic() + 60
        while subprocess.run(
            [CORTEX, "ingest", str(third_note), "--org", "acme"],
            env={**run_env(data_dir, port)},
            capture_output=True,
            timeout=120,
            check=False,
        ).returncode:
            assert time.monotonic() < deadline, (tmp_path / "first.log").read_text()
            time.sleep(1)
        assert found_eventually(port, token, "receipts thirty days", "Expense reports")
        # Searches are shared by both copies; whichever answers, the answer is the same.
        assert all(search(port, token, "volume discount")[:1] == ["Pricing policy"] for _ in range(10))
        # Killed, the supervisor cannot stop its services: they stop themselves. Before, they lived on
        # (holding the gateway's port), and the next run on the same data failed.
        services = services_of(first.pid)
        assert len(services) == 4  # gateway, indexer, two aggregators
        servers = {pid_in(data_dir / "pg" / "postmaster.pid"), pid_in(data_dir / "nats" / "nats.pid")}
        first.kill()
        first.wait()
        assert all_ended(services, 30), "services outlived their supervisor"
        # Its warden then stops the embedded servers. Before, they ran on until the next run took them over.
        assert all_ended(servers, STOP_SECONDS), "PostgreSQL or NATS outlived the run"
        assert not (data_dir / "runtime.env").exists()
    first_log = (tmp_path / "first.log").read_text()
    assert f"API: http://127.0.0.1:{port}/api/memory" in first_log
    assert "indexer stopped unexpectedly (killed by SIGKILL); restarting it in 1 s" in first_log
    assert "indexer restarted" in first_log
    assert "embedded NATS stopped unexpectedly; starting it again" in first_log
    for copy in ("aggregator.1", "aggregator.2"):
        assert any(line.startswith(copy) and "answering rpc.aggregator.feed" in line for line in first_log.splitlines())

    assert "is no setting of" not in first_log  # every variable the run gives its services is read

    # A misspelt setting is named: pydantic ignores it, and before, so did the gateway, without a word.
    with cortex_run(data_dir, port, tmp_path / "second.log", given={"CORTEX_GATEWAY_BURST": "5"}):
        token = cli(data_dir, "token", "--org", "acme", "--user", "alice").strip().splitlines()[-1]
        assert found_eventually(port, token, "volume discount", "Pricing policy"), "the data outlived the first run"
    second_log = (tmp_path / "second.log").read_text()
    assert "aggregator.1" not in second_log
    ignored = "CORTEX_GATEWAY_BURST is no setting of cortex-gateway; it is ignored (did you mean "
    assert f"{ignored}CORTEX_GATEWAY_RATE_LIMIT_BURST?)" in second_log


def test_a_token_made_in_another_shell_is_valid_with_the_secret_the_run_was_given(tmp_path: Path) -> None:
    data_dir, port = tmp_path / "data", free_port("127.0.0.1")
    # A gateway's own secret left in the shell would win over the one the run gives every service.
    given = {"CORTEX_SECRET": "given-" + "s" * 40, "CORTEX_GATEWAY_SECRET": "stale-" + "s" * 40}
    with cortex_run(data_dir, port, tmp_path / "run.log", given=given):
        token = cli(data_dir, "token", "--org", "acme", "--user", "alice", "--create").strip().splitlines()[-1]

        assert search(port, token, "anything") == []  # before: 401, signed with a secret the CLI made itself
    assert "ignoring CORTEX_GATEWAY_SECRET" in (tmp_path / "run.log").read_text()


@pytest.mark.parametrize("where", ["environment", "dotenv"])
def test_a_gateway_port_in_use_is_refused_before_anything_starts(tmp_path: Path, where: str) -> None:
    env = run_env(tmp_path / "data", 0)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        if where == "environment":
            env["CORTEX_GATEWAY_PORT"] = str(port)
        else:  # the services read `.env`; before, `cortex run` did not
            del env["CORTEX_GATEWAY_PORT"]
            (tmp_path / ".env").write_text(f"CORTEX_GATEWAY_PORT={port}\n")

        done = subprocess.run(
            [CORTEX, "run"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=START_SECONDS, check=False
        )

    # Before: the gateway failed to bind, was restarted five times over ~30 s, and the run ended with 1.
    assert done.returncode == 2, done.stdout
    assert (
        f"cannot start: cannot listen on 127.0.0.1:{port} (CORTEX_GATEWAY_HOST, CORTEX_GATEWAY_PORT): " in done.stdout
    )
    assert "Address already in use" in done.stdout
    assert not (tmp_path / "data" / "pg").exists()  # refused before any server started


def test_a_number_of_copies_that_is_not_one_or_more_is_refused(tmp_path: Path) -> None:
    env = {**os.environ, "CORTEX_DATA_DIR": str(tmp_path)}
    done = subprocess.run([CORTEX, "run", "--aggregators", "0"], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert "between 1 and" in done.stderr


@pytest.mark.parametrize(
    ("pin", "why"),
    [
        (  # before: a traceback, restarted five times; now every service checks its settings first
            {"CORTEX_INDEXER_LOG_LEVEL": "verbose"},
            "cortex-indexer cannot start: CORTEX_INDEXER_LOG_LEVEL: Input should be 'DEBUG', 'INFO',",
        ),
        ({"CORTEX_PLUGIN_EMBEDDER": "openai"}, "the OpenAI-compatible embedder needs CORTEX_EMBEDDER_OPENAI_BASE_URL"),
    ],
    ids=["invalid-setting", "not-configured"],
)
def test_a_configuration_the_services_cannot_run_with_stops_the_run_at_once_saying_why(
    tmp_path: Path, pin: dict[str, str], why: str
) -> None:
    env = {**run_env(tmp_path / "data", free_port("127.0.0.1")), **pin}
    for variable in [name for name in env if name.startswith("CORTEX_EMBEDDER_OPENAI_")]:
        env.pop(variable)

    done = subprocess.run([CORTEX, "run"], env=env, capture_output=True, text=True, timeout=START_SECONDS, check=False)

    # Before: the bogus pin ran on the local model unnoticed; the unset one restarted 5 times, with tracebacks.
    assert done.returncode == 2, done.stdout
    assert why in done.stdout
    assert "cannot start with this configuration (said above); stopping all" in done.stdout
    assert "Cortex is running" not in done.stdout  # before: said first, as the services started
    assert "restarting" not in done.stdout
    assert "Traceback" not in done.stdout


@pytest.mark.parametrize(
    ("pin", "why"),
    [
        (
            {"CORTEX_PLUGIN_EMBEDDER": "bogus"},
            "CORTEX_PLUGIN_EMBEDDER=bogus: embedder plugin 'bogus' is not installed (installed: local,",
        ),
        (  # names are exact: before, refused only by the services, once PostgreSQL and NATS had started
            {"CORTEX_PLUGIN_VECTOR_STORE": "QDRANT"},
            "CORTEX_PLUGIN_VECTOR_STORE=QDRANT: vector_store plugin 'QDRANT' is not installed (installed: pgvector,",
        ),
        (  # before: a misspelt pin pinned nothing, silently
            {"CORTEX_PLUGIN_RERANKR": "http"},
            "CORTEX_PLUGIN_RERANKR names no plugin category (categories: extractor, chunker, embedder,",
        ),
    ],
    ids=["not-installed", "letter-case", "misspelt-pin"],
)
def test_a_pin_that_names_no_plugin_or_no_category_is_refused_before_anything_starts(
    tmp_path: Path, pin: dict[str, str], why: str
) -> None:
    env = {**run_env(tmp_path / "data", free_port("127.0.0.1")), **pin}

    done = subprocess.run([CORTEX, "run"], env=env, capture_output=True, text=True, timeout=START_SECONDS, check=False)

    assert done.returncode == 2, done.stdout
    assert f"cannot start: {why}" in done.stdout
    assert not (tmp_path / "data" / "pg").exists()  # refused before any server started
