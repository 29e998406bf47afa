"""Infrastructure and services for a benchmark run, in the deployment shape.

PostgreSQL and NATS come from DATABASE_URL / NATS_URL when set, else the embedded servers in a temporary
directory. Migrations are applied (as the owner), then each service runs as its own OS process
(`python -m cortex_<name>`) with DATABASE_URL (on the embedded server the application role, under
row-level security, as `cortex run` does), NATS_URL, CORTEX_SECRET, CORTEX_GATEWAY_PORT and the
gateway's per-token rate limit lifted; their output goes to bench/results/logs/. Anything else in the
environment reaches the services too (e.g. CORTEX_INDEXER_CONCURRENCY, OMP_NUM_THREADS for
experiments). A run is ready once the indexer consumes, the aggregator answers and the gateway's
/readyz says so.
"""

import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from cortex_cli.organizations import ensure_membership
from cortex_embedded_servers import EmbeddedNats, EmbeddedPostgres, free_port
from cortex_gateway.tokens import issue_token
from cortex_store.migrate import upgrade
from cortex_store.models import MemberRole
from cortex_store.tenancy import app_role_url

RESULTS_DIR = Path(__file__).parent / "results"
LOG_DIR = RESULTS_DIR / "logs"
READY_TIMEOUT_SECONDS = 300.0
STOP_TIMEOUT_SECONDS = 15.0

# The gateway's per-token rate limit (600/min by default) would throttle a load test, not measure it.
RATE_LIMIT_OFF = {"CORTEX_GATEWAY_RATE_LIMIT_PER_MINUTE": "100000000", "CORTEX_GATEWAY_RATE_LIMIT_BURST": "100000"}

# A line each service logs once it is serving (after its model, if any, has loaded).
READY_LINES = {
    "indexer": "consuming",
    "aggregator": "answering rpc.aggregator.feed",
}


@dataclass(frozen=True)
class Infrastructure:
    database_url: str  # the owner's: migrations and the bench's own bulk loads
    service_database_url: str  # what the services get: the application role on the embedded server
    nats_url: str
    postgres_log: Path | None  # the embedded server's log; None for a given DATABASE_URL
    server_pids: dict[str, int]  # embedded servers only: postgres (the postmaster), nats


@dataclass(frozen=True)
class Deployment:
    database_url: str
    nats_url: str
    base_url: str
    secret: str
    logs: dict[str, Path]
    postgres_log: Path | None
    pids: dict[str, int]  # services and embedded servers, for CPU accounting


@dataclass(frozen=True)
class Member:
    """A fresh organization with one member, and what that member sends with every request."""

    slug: str
    org_id: uuid.UUID
    user_id: str
    headers: dict[str, str]


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


@contextmanager
def infrastructure() -> Iterator[Infrastructure]:
    database_url = os.environ.get("DATABASE_URL")
    nats_url = os.environ.get("NATS_URL")
    # SIGTERM (`timeout`, a CI runner) unwinds like Ctrl-C, so the embedded servers below are stopped
    # rather than left running, detached, after the benchmark is gone.
    previous = signal.signal(signal.SIGTERM, _exit_on_sigterm)
    # A short path: PostgreSQL's unix socket path must stay under ~100 bytes.
    with tempfile.TemporaryDirectory(prefix="cxb-", dir="/tmp") as scratch:
        postgres = None if database_url else EmbeddedPostgres(Path(scratch) / "pg")
        nats = None if nats_url else EmbeddedNats(Path(scratch) / "nats", port=0)
        try:
            if postgres is not None:
                database_url = postgres.start()
            if nats is not None:
                nats_url = nats.start()
            assert database_url is not None
            assert nats_url is not None
            yield Infrastructure(
                database_url=database_url,
                # As `cortex run` does: on the embedded server the services connect as the application
                # role (row-level security applies); a given DATABASE_URL is used as it is.
                service_database_url=app_role_url(database_url) if postgres is not None else database_url,
                nats_url=nats_url,
                postgres_log=postgres.log_file if postgres is not None else None,
                server_pids=_server_pids(postgres, nats),
            )
        finally:
            if nats is not None:
                nats.stop()
            if postgres is not None:
                postgres.stop()
            signal.signal(signal.SIGTERM, previous)


def _first_int(path: Path) -> int | None:
    try:
        return abs(int(path.read_text().split()[0]))
    except (OSError, ValueError, IndexError):
        return None


def _server_pids(postgres: EmbeddedPostgres | None, nats: EmbeddedNats | None) -> dict[str, int]:
    pids = {
        "postgres": _first_int(postgres.data_dir / "postmaster.pid") if postgres else None,
        "nats": _first_int(nats.data_dir / "nats.pid") if nats else None,
    }
    return {name: pid for name, pid in pids.items() if pid is not None}


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError as exc:
        return f"(cannot read {path}: {exc})"


class _Service:
    def __init__(self, name: str, env: dict[str, str], log_path: Path) -> None:
        self.name = name  # `aggregator.2`: the second copy of the aggregator
        self.service = name.split(".", maxsplit=1)[0]
        self.log_path = log_path
        with log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", f"cortex_{self.service}"],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,  # a Ctrl-C reaches the bench only; it stops the services
            )

    def check_alive(self) -> None:
        code = self.process.poll()
        if code is not None:
            raise RuntimeError(f"{self.name} exited with code {code}; last lines:\n{_tail(self.log_path)}")

    def log_has(self, needle: str) -> bool:
        try:
            return needle in self.log_path.read_text(errors="replace")
        except OSError:
            return False

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(STOP_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _gateway_ready(base_url: str) -> bool:
    try:
        return httpx.get(f"{base_url}/readyz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _wait_ready(services: Sequence[_Service], base_url: str | None) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    pending = {service.name for service in services}
    while pending:
        for service in services:
            service.check_alive()
            if service.name not in pending:
                continue
            needle = READY_LINES.get(service.service)
            ready = service.log_has(needle) if needle else base_url is not None and _gateway_ready(base_url)
            if ready:
                pending.discard(service.name)
        if time.monotonic() > deadline:
            raise TimeoutError(f"not ready after {READY_TIMEOUT_SECONDS:g} s: {', '.join(sorted(pending))}")
        time.sleep(0.2)


def _stop_all(services: list[_Service]) -> None:
    for service in reversed(services):
        service.stop()


@contextmanager
def deployment(
    label: str, services: Sequence[str] = ("indexer", "aggregator", "gateway"), *, aggregators: int = 1
) -> Iterator[Deployment]:
    """Infrastructure, migrations and the given services, each its own process (the aggregator in
    `aggregators` copies, as `cortex run --aggregators N` runs it); all stopped on exit."""
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        infra = stack.enter_context(infrastructure())
        upgrade(infra.database_url)
        secret = "bench-" + secrets.token_urlsafe(48)
        port = free_port("127.0.0.1")
        env = {
            **os.environ,
            "DATABASE_URL": infra.service_database_url,
            "NATS_URL": infra.nats_url,
            "CORTEX_SECRET": secret,
            "CORTEX_GATEWAY_PORT": str(port),
            "PYTHONUNBUFFERED": "1",
            **RATE_LIMIT_OFF,
        }
        running: list[_Service] = []
        stack.callback(_stop_all, running)
        copies = [f"aggregator.{n}" for n in range(2, aggregators + 1)] if "aggregator" in services else []
        for name in [*services, *copies]:
            running.append(_Service(name, env, LOG_DIR / f"{label}-{name}.log"))  # noqa: PERF401 - stop what started
        base_url = f"http://127.0.0.1:{port}"
        _wait_ready(running, base_url if "gateway" in services else None)
        yield Deployment(
            database_url=infra.database_url,
            nats_url=infra.nats_url,
            base_url=base_url,
            secret=secret,
            logs={service.name: service.log_path for service in running},
            postgres_log=infra.postgres_log,
            pids={**{service.name: service.process.pid for service in running}, **infra.server_pids},
        )


async def new_member(dep: Deployment, prefix: str) -> Member:
    """Create an organization and a member of it; the headers carry a bearer token and the org slug."""
    slug = f"{prefix}-{uuid.uuid4().hex[:10]}"
    user_id = f"bench-{slug}"
    org_id = await ensure_membership(dep.database_url, slug, user_id, MemberRole.MEMBER, create=True)
    headers = {"Authorization": f"Bearer {issue_token(user_id, dep.secret)}", "X-Scope-Slug": slug}
    return Member(slug=slug, org_id=org_id, user_id=user_id, headers=headers)
