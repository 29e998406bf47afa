"""``cortex run``: PostgreSQL, NATS, migrations and every service, in the foreground.

Without ``database_url`` / ``nats_url`` the embedded servers start with their data under
``data_dir``. Each service runs as ``python -m cortex_<service>`` in its own process group, its
output printed line by line behind its name. SIGINT, SIGTERM or SIGHUP stop everything (exit
code 0). A service or embedded server that exits on its own is restarted; one that keeps exiting
stops everything (exit code 1; cortex_cli.restarts), and so does a service that cannot start with the
configuration it was given (exit code 2: a restart would fail the same way).
"""

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, TracebackType
from typing import IO, Any, Self, TextIO

from cortex_cli.restarts import RestartPolicy
from cortex_contracts.settings_values import MAX_PORT
from cortex_embedded_servers import EmbeddedNats, EmbeddedPostgres, free_port, port_is_free
from cortex_gateway.listen import listen_refusal
from cortex_gateway.settings import GatewaySettings
from cortex_plugins.registry import PluginRegistry
from cortex_plugins.settings import pins_in, unknown_pin_variables
from cortex_supervision.lifeline import LIFELINE_ENV
from cortex_supervision.readiness import READY, READY_ENV
from cortex_supervision.service_run import CANNOT_START

DEFAULT_SERVICES = ("gateway", "indexer", "aggregator")
NATS_HOST = "127.0.0.1"
NATS_PORT = 4222
STOP_TIMEOUT_SECONDS = 10.0

_SELF = "cortex"
_COLORS = ("36", "33", "35", "32", "34", "31", "96", "93", "95", "92", "94", "91")
_STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))
_Handler = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None
_URL_PASSWORD = re.compile(r"(?<=://)([^:/@]*):[^@/]*@")


@dataclass(frozen=True, kw_only=True)
class RunSettings:
    """What ``cortex run`` starts, and where."""

    migrate: Callable[[str], None]
    """Applies the database migrations, given the database URL."""
    data_dir: Path = Path(".cortex")
    """Where the embedded servers keep their data (``pg/``, ``nats/``)."""
    database_url: str | None = None
    """An existing PostgreSQL to use; None starts the embedded one."""
    nats_url: str | None = None
    """An existing NATS with JetStream to use; None starts the embedded one."""
    services: tuple[str, ...] = DEFAULT_SERVICES
    """Each runs as ``python -m cortex_<name>``."""
    copies: Mapping[str, int] = field(default_factory=dict)
    """Processes per service (1 unless named): copies of a service share its work through the queue groups."""
    extra_env: Mapping[str, str] = field(default_factory=dict)
    """Added to the services' environment (``DATABASE_URL`` and ``NATS_URL`` win over it)."""
    service_database_url: Callable[[str], str] = str
    """The URL the services connect with, given the one migrations ran with (e.g. as a less privileged role)."""
    on_ready: Callable[[str, str], None] | None = None
    """Called with the database and NATS URLs once migrated, before the services start."""
    run_lock: int | None = None
    """The run lock's descriptor (`cortex_cli.run_lock`): every service inherits it, and a warden
    (`cortex_cli.warden`) waiting for it stops the embedded servers should this process be killed."""


class _Console:
    """Prints lines behind a padded (and, on a terminal, coloured) name; safe from any thread."""

    def __init__(self, names: Sequence[str], stream: TextIO) -> None:
        width = max(map(len, names))
        color = stream.isatty() and "NO_COLOR" not in os.environ
        self._prefixes: dict[str, str] = {}
        for index, name in enumerate(names):
            prefix = f"{name:<{width}} | "
            code = "1" if name == _SELF else _COLORS[index % len(_COLORS)]
            self._prefixes[name] = f"\x1b[{code}m{prefix}\x1b[0m" if color else prefix
        self._stream = stream
        self._lock = threading.Lock()

    def line(self, name: str, text: str) -> None:
        with self._lock:
            try:
                self._stream.write(f"{self._prefixes[name]}{text}\n")
                self._stream.flush()
            except (OSError, ValueError):
                pass  # stdout went away (closed pipe); keep draining the services' output


class _StopSignals:
    """While installed, SIGINT/SIGTERM/SIGHUP request a stop (``requested`` is set).

    Only inside ``interruptible()`` do they also raise KeyboardInterrupt, to cut a long step
    short (the migrations). Elsewhere the request waits for the current step to end: a server
    start is never torn in half, and shutdown runs to its end.
    """

    def __init__(self) -> None:
        self.requested = threading.Event()
        self.received: signal.Signals | None = None
        self._interrupting = False
        self._previous: dict[int, _Handler] = {}

    def __enter__(self) -> Self:
        for signum in _STOP_SIGNALS:
            self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        for signum, handler in self._previous.items():
            # None: a handler installed outside Python, which cannot be put back from here.
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)

    def check(self) -> None:
        """Raise KeyboardInterrupt if a stop was requested."""
        if self.requested.is_set():
            raise KeyboardInterrupt

    @contextmanager
    def interruptible(self) -> Iterator[None]:
        self.check()
        self._interrupting = True
        try:
            yield
        finally:
            self._interrupting = False

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        self.received = signal.Signals(signum)
        self.requested.set()
        if self._interrupting:
            self._interrupting = False
            raise KeyboardInterrupt


@dataclass
class _Service:
    name: str
    kind: str  # what runs: `python -m cortex_<kind>`
    process: subprocess.Popen[bytes]
    pump: threading.Thread
    lifeline: int | None  # the write end of the service's lifeline (cortex_supervision), held until it stops
    ready_pipe: int | None  # the read end of its readiness pipe (cortex_supervision.readiness), non-blocking
    ready: bool = False


def _pump(name: str, stream: IO[bytes], console: _Console) -> None:
    with stream:
        for raw in iter(stream.readline, b""):
            console.line(name, raw.decode("utf-8", "replace").rstrip("\r\n"))


def instances(settings: RunSettings) -> list[tuple[str, str]]:
    """(name shown in the log, service) of every process to start: `aggregator.1`, `aggregator.2`, … for copies."""
    started: list[tuple[str, str]] = []
    for service in settings.services:
        count = settings.copies.get(service, 1)
        if count < 1:
            raise ValueError(f"{service}: at least one copy, not {count}")
        started += [(service if count == 1 else f"{service}.{n}", service) for n in range(1, count + 1)]
    return started


def _spawn(name: str, service: str, env: Mapping[str, str], console: _Console, run_lock: int | None) -> _Service:
    # The service stops itself once this process is gone, even killed (cortex_supervision.lifeline).
    read_end, write_end = os.pipe() if os.name == "posix" else (None, None)
    ready_read, ready_write = os.pipe() if os.name == "posix" else (None, None)
    lifeline = {LIFELINE_ENV: str(read_end)} if read_end is not None else {}
    lifeline |= {READY_ENV: str(ready_write)} if ready_write is not None else {}
    inherited = tuple(fd for fd in (read_end, ready_write, run_lock) if fd is not None)
    process = subprocess.Popen(  # noqa: S603 - our interpreter, a fixed module name
        [sys.executable, "-m", f"cortex_{service}"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**env, **lifeline},
        pass_fds=inherited,
        # Own process group: a terminal Ctrl-C reaches this supervisor only, which then stops
        # the services in order, and a service's own subprocesses are signalled with it.
        start_new_session=True,
    )
    for ours_no_more in (read_end, ready_write):
        if ours_no_more is not None:
            os.close(ours_no_more)
    if ready_read is not None:
        os.set_blocking(ready_read, False)
    assert process.stdout is not None
    pump = threading.Thread(target=_pump, args=(name, process.stdout, console), name=f"output-{name}", daemon=True)
    pump.start()
    return _Service(name, service, process, pump, write_end, ready_read)


def _signal_group(service: _Service, signum: int) -> None:
    """Signal the service's whole process group (it leads one), or just it where there are none."""
    try:
        if os.name == "posix":
            os.killpg(service.process.pid, signum)
        elif service.process.poll() is None:
            service.process.terminate()
    except ProcessLookupError:
        pass  # already gone


def describe_exit(code: int, *, sent: signal.Signals | None = None) -> str:
    """`sent`: the signal this supervisor sent it. A service may end by that very signal once it has shut
    down cleanly (uvicorn raises it again on its way out): no alarm then."""
    if code < 0:
        ended_by = signal.Signals(-code)
        return f"on the {ended_by.name} it was sent" if ended_by is sent else f"killed by {ended_by.name}"
    return f"exit code {code}"


def _hide_password(url: str) -> str:
    return _URL_PASSWORD.sub(r"\1:***@", url)


def _start_warden(settings: RunSettings) -> None:
    """Left running on purpose: it outlives this process, and ends by itself once the run is over."""
    given = {"postgres": settings.database_url, "nats": settings.nats_url}
    embedded = [f"--{kind}" for kind, url in given.items() if url is None]
    if settings.run_lock is None or not embedded:
        return
    with (settings.data_dir / "warden.log").open("ab") as log:
        subprocess.Popen(  # noqa: S603 - our interpreter, a fixed module name
            [sys.executable, "-m", "cortex_cli.warden", "--data-dir", str(settings.data_dir), *embedded],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # no terminal's Ctrl-C or hang-up reaches it
        )


def _start_database(settings: RunSettings, started: list[EmbeddedPostgres | EmbeddedNats], console: _Console) -> str:
    if settings.database_url is not None:
        return settings.database_url
    postgres = EmbeddedPostgres(settings.data_dir / "pg")
    console.line(_SELF, f"starting PostgreSQL (data in {postgres.data_dir})")
    started.append(postgres)
    return postgres.start()


def _start_nats(settings: RunSettings, started: list[EmbeddedPostgres | EmbeddedNats], console: _Console) -> str:
    if settings.nats_url is not None:
        return settings.nats_url
    nats = EmbeddedNats(settings.data_dir / "nats", port=NATS_PORT, host=NATS_HOST)
    nats.stop_leftover()  # a server a killed run left behind would hold the port
    if not port_is_free(NATS_HOST, NATS_PORT):
        nats.port = free_port(NATS_HOST)
        console.line(_SELF, f"port {NATS_PORT} is busy; embedded NATS listens on {nats.port}")
    console.line(_SELF, f"starting NATS with JetStream (data in {nats.data_dir})")
    started.append(nats)
    return nats.start()


def _origin(given_url: str | None, data_dir: Path) -> str:
    return "given" if given_url is not None else f"embedded, data in {data_dir.resolve()}"


def _gateway_ready(host: str, port: str) -> bool:
    """The gateway answers /readyz with 200 (PostgreSQL and NATS answer it)."""
    probe = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)  # noqa: S104 - a probe, not a bind
    try:
        with urllib.request.urlopen(f"http://{_url_host(probe)}:{port}/readyz", timeout=0.5) as answer:
            return bool(answer.status == 200)
    except (OSError, ValueError):  # not listening yet, 503 (HTTPError), or a port that is no number
        return False


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _announcer(
    settings: RunSettings, names: Sequence[str], database_url: str, nats_url: str, console: _Console
) -> Callable[[Sequence[_Service]], bool]:
    """What `_supervise` calls until it returns True: "Cortex is running" once every service got past its
    start-up checks (none may still refuse to start) and the gateway answers /readyz."""
    host, port = gateway_address({**os.environ, **settings.extra_env})

    def announce(services: Sequence[_Service]) -> bool:
        if not all(_reported_ready(service) for service in services):
            return False
        if any(service.kind == "gateway" for service in services) and not _gateway_ready(host, port):
            return False
        _announce(settings, names, database_url, nats_url, (host, port), console)
        return True

    return announce


def _announce(
    settings: RunSettings,
    names: Sequence[str],
    database_url: str,
    nats_url: str,
    gateway: tuple[str, str],
    console: _Console,
) -> None:
    database = _origin(settings.database_url, settings.data_dir / "pg")
    nats = _origin(settings.nats_url, settings.data_dir / "nats")
    host, port = gateway
    console.line(_SELF, f"Cortex is running {', '.join(names)}; Ctrl-C stops it all")
    if port.isdigit():  # else the gateway refuses the value, and says so
        console.line(
            _SELF, f"  API: http://{host}:{port}/api/memory  (its OpenAPI document: http://{host}:{port}/openapi.json)"
        )
    console.line(_SELF, f"  DATABASE_URL={_hide_password(database_url)}  ({database})")
    console.line(_SELF, f"  NATS_URL={_hide_password(nats_url)}  ({nats})")


def _server_name(server: EmbeddedPostgres | EmbeddedNats) -> str:
    return "PostgreSQL" if isinstance(server, EmbeddedPostgres) else "NATS"


def _supervise(
    services: list[_Service],
    servers: Sequence[EmbeddedPostgres | EmbeddedNats],
    signals: _StopSignals,
    console: _Console,
    respawn: Callable[[_Service], _Service],
    announce: Callable[[Sequence[_Service]], bool],
) -> int:
    """Restart services and embedded servers that exit on their own until a stop signal (0), until one
    keeps exiting (1), or until a service cannot start with its configuration (CANNOT_START). The services
    reconnect to a restarted server by themselves."""
    policy = RestartPolicy()
    due: dict[int, float] = {}  # index in `services` → when to restart it
    announced = False
    while not signals.requested.wait(0.2):
        now = time.monotonic()
        for server in servers:
            if server.running():
                continue
            name = _server_name(server)
            if policy.delay(name, now) is None:  # counted like a service's; started at once, every service waits on it
                console.line(_SELF, f"embedded {name} stopped unexpectedly, again; stopping all")
                return 1
            console.line(_SELF, f"embedded {name} stopped unexpectedly; starting it again")
            try:
                server.start()
            except Exception as err:  # noqa: BLE001 - reported, then everything stops
                console.line(_SELF, f"could not start {name} again ({err}); stopping all")
                return 1
        for index, service in enumerate(services):
            if index in due:
                if now >= due[index]:
                    del due[index]
                    services[index] = respawn(service)
                    console.line(_SELF, f"{service.name} restarted")
                continue
            code = service.process.poll()
            if code is None:
                continue
            _signal_group(service, signal.SIGKILL)  # what it may have left in its process group
            _release(service)  # its last words (a traceback) first
            if code == CANNOT_START:  # its configuration: a restart would fail the same way
                console.line(_SELF, f"{service.name} cannot start with this configuration (said above); stopping all")
                return CANNOT_START
            reason = describe_exit(code)
            delay = policy.delay(service.name, now)
            if delay is None:
                times = f"{policy.max_restarts} restarts in {policy.window_seconds / 60:g} min"
                console.line(_SELF, f"{service.name} stopped unexpectedly ({reason}) after {times}; stopping all")
                return 1
            console.line(_SELF, f"{service.name} stopped unexpectedly ({reason}); restarting it in {delay:g} s")
            due[index] = now + delay
        announced = announced or announce(services)
    name = signals.received.name if signals.received is not None else "a signal"
    console.line(_SELF, f"received {name}; stopping everything")
    return 0


def _release(service: _Service) -> None:
    """After the service ended: its lifeline and readiness pipe, and the rest of its output."""
    for descriptor in (service.lifeline, service.ready_pipe):
        if descriptor is not None:
            os.close(descriptor)
    service.lifeline = service.ready_pipe = None
    service.pump.join(timeout=2)


def _reported_ready(service: _Service) -> bool:
    """Whether the service said it got past its start-up checks (cortex_supervision.readiness)."""
    if not service.ready and service.ready_pipe is not None:
        with contextlib.suppress(BlockingIOError):
            service.ready = READY in os.read(service.ready_pipe, len(READY))
    return service.ready


def _stop_services(services: list[_Service], console: _Console) -> None:
    """SIGTERM every service, wait up to STOP_TIMEOUT_SECONDS, SIGKILL what is left."""
    running = [service for service in services if service.process.poll() is None]
    for service in running:
        _signal_group(service, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_SECONDS
    for service in running:
        try:
            service.process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            console.line(_SELF, f"{service.name} ignored SIGTERM for {STOP_TIMEOUT_SECONDS:g} s")
    for service in services:
        if os.name == "posix":
            _signal_group(service, signal.SIGKILL)  # the service, or what it left behind
        else:
            service.process.kill()
        code = service.process.wait()
        _release(service)
        if service in running:
            console.line(_SELF, f"{service.name} stopped ({describe_exit(code, sent=signal.SIGTERM)})")


def _stop_servers(started: list[EmbeddedPostgres | EmbeddedNats], console: _Console) -> None:
    for server in reversed(started):
        kind = _server_name(server)
        try:
            server.stop()
        except Exception as err:  # noqa: BLE001 - report and go on stopping the others
            console.line(_SELF, f"could not stop {kind}: {err}")
        else:
            console.line(_SELF, f"{kind} stopped")


LOCAL_QDRANT_REFUSED = (
    "CORTEX_PLUGIN_VECTOR_STORE=qdrant without CORTEX_QDRANT_URL means Qdrant's local mode, which only one "
    "process may open, but the indexer and the aggregator are separate processes: set CORTEX_QDRANT_URL to a "
    "Qdrant server (docker-compose.yml runs one) or use the default pgvector store"
)


# A service's own override of what `cortex run` gives them all; left in the shell it would win.
_OVERRIDES = re.compile(r"CORTEX_(GATEWAY|INDEXER|AGGREGATOR)_(DATABASE_URL|NATS_URL|SECRET)")


def gateway_address(environment: Mapping[str, str]) -> tuple[str, str]:
    """Where the gateway will listen (GatewaySettings' host and port, as the environment sets them)."""
    fields = GatewaySettings.model_fields
    host = environment.get("CORTEX_GATEWAY_HOST", str(fields["host"].default))
    return host, environment.get("CORTEX_GATEWAY_PORT", str(fields["port"].default))


def refusal(environment: Mapping[str, str]) -> str | None:
    """Why this configuration cannot run as separate services, or None."""
    pins = pins_in(environment)
    # Each service would refuse these too, but only once the embedded servers had started for it.
    misnamed = PluginRegistry(pins=pins, unknown=unknown_pin_variables(environment)).naming_refusals()
    if misnamed:
        return "; ".join(misnamed)
    if pins.get("vector_store") == "qdrant" and not environment.get("CORTEX_QDRANT_URL", "").strip():
        return LOCAL_QDRANT_REFUSED
    host, port = gateway_address(environment)
    # Before anything starts, rather than once the gateway does; a port that is not a port number, or an
    # empty host, is the gateway's own settings check to refuse.
    if port.isdigit() and 1 <= int(port) <= MAX_PORT and host.strip():
        return listen_refusal(host, int(port))
    return None


def run_all(settings: RunSettings) -> int:
    """Run Cortex in the foreground until a stop signal (returns 0) or a service dies (1).

    Servers started here are stopped before returning, also when start-up fails (the error
    then propagates: a server that cannot start, a failed migration).
    """
    processes = instances(settings)
    names = [name for name, _ in processes]
    console = _Console([_SELF, *names], sys.stdout)
    refused = refusal({**os.environ, **settings.extra_env})
    if refused is not None:
        console.line(_SELF, f"cannot start: {refused}")
        return 2
    started: list[EmbeddedPostgres | EmbeddedNats] = []
    services: list[_Service] = []
    with _StopSignals() as signals:
        try:
            _start_warden(settings)
            database_url = _start_database(settings, started, console)
            signals.check()
            nats_url = _start_nats(settings, started, console)
            console.line(_SELF, "applying database migrations")
            with signals.interruptible():
                settings.migrate(database_url)
            if settings.on_ready is not None:
                settings.on_ready(database_url, nats_url)
            env = {**os.environ, **settings.extra_env}
            for ignored in sorted(filter(_OVERRIDES.fullmatch, env)):
                console.line(_SELF, f"ignoring {ignored}: cortex run gives every service its database, NATS and secret")
                del env[ignored]
            env |= {"DATABASE_URL": settings.service_database_url(database_url), "NATS_URL": nats_url}
            env.setdefault("PYTHONUNBUFFERED", "1")  # lines as they are printed, not per 8 KiB
            console.line(_SELF, f"starting {', '.join(names)}")
            for name, service in processes:
                if signals.requested.is_set():
                    break
                services.append(_spawn(name, service, env, console, settings.run_lock))

            def respawn(ended: _Service) -> _Service:
                return _spawn(ended.name, ended.kind, env, console, settings.run_lock)

            announce = _announcer(settings, names, database_url, nats_url, console)
            code = _supervise(services, started, signals, console, respawn, announce)
        except KeyboardInterrupt:
            name = signals.received.name if signals.received is not None else "SIGINT"
            console.line(_SELF, f"received {name} while starting; stopping")
            code = 0
        finally:
            _stop_services(services, console)
            _stop_servers(started, console)
    return code
