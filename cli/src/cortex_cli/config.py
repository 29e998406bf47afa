"""Where the CLI finds Cortex: environment first, else what `cortex run` wrote into its data directory."""

import os
import secrets
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cortex_contracts.settings_values import checked_database_url, secret_problem

RUNTIME_FILE = "runtime.env"
SECRET_FILE = "secret"  # noqa: S105 — a file name, not a secret
# What configures plugins: pins, and each built-in plugin's settings.
PLUGIN_SETTINGS = (
    "CORTEX_PLUGIN_",
    "CORTEX_EMBEDDER_",
    "CORTEX_RERANKER_",
    "CORTEX_QDRANT_",
    "CORTEX_PGVECTOR_",
    "CORTEX_MEM0_",
    "CORTEX_INDEXER_EMBEDDER",  # each service's embedder, without a CORTEX_PLUGIN_EMBEDDER pin (QA 40)
    "CORTEX_AGGREGATOR_EMBEDDER",
)


def data_dir() -> Path:
    return Path(os.environ.get("CORTEX_DATA_DIR", ".cortex"))


def read_runtime(directory: Path) -> dict[str, str]:
    path = directory / RUNTIME_FILE
    if not path.exists():
        return {}
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
    return {key.strip(): value.strip() for key, value in pairs}


def write_runtime(directory: Path, values: dict[str, str]) -> None:
    """Mode 0600: plugin settings may hold API keys."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / RUNTIME_FILE
    path.touch(mode=0o600)
    path.chmod(0o600)
    path.write_text("".join(f"{key}={value}\n" for key, value in values.items() if "\n" not in value))


def plugin_settings(environment: Mapping[str, str]) -> dict[str, str]:
    return {key: value for key, value in environment.items() if key.startswith(PLUGIN_SETTINGS)}


@contextmanager
def plugins_as_the_run_has_them() -> Iterator[None]:
    """Within: the plugin settings of the `cortex run` this CLI talks to, in place of the CLI's own, so that
    `cortex plugins` sees and checks what the services do. Outside a run (DATABASE_URL set), unchanged."""
    runtime = {} if os.environ.get("DATABASE_URL") else read_runtime(data_dir())
    if "DATABASE_URL" not in runtime:
        yield
        return
    saved = dict(os.environ)
    for key in plugin_settings(saved):
        del os.environ[key]
    os.environ.update(plugin_settings(runtime))
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def clear_runtime(directory: Path) -> None:
    (directory / RUNTIME_FILE).unlink(missing_ok=True)


class BadSetting(ValueError):
    """A variable the CLI reads itself holds a value it cannot take."""


def ensure_secret(directory: Path) -> str:
    """CORTEX_SECRET; else the one the `cortex run` in this data directory was given (so that tokens made in
    another shell are valid there); else the one stored in the data directory (made on first use, 0600)."""
    if "CORTEX_SECRET" in os.environ:
        secret = os.environ["CORTEX_SECRET"]
        if not secret.strip():  # a template's unset variable, say: as the services refuse it
            raise BadSetting("CORTEX_SECRET is empty: give one, or unset it to use the data directory's own")
        if problem := secret_problem(secret):  # as the services would refuse it, once started
            raise BadSetting(f"CORTEX_SECRET {problem}")
        return secret
    if given := read_runtime(directory).get("CORTEX_SECRET"):
        return given
    path = directory / SECRET_FILE
    if not path.exists():
        directory.mkdir(parents=True, exist_ok=True)
        path.touch(mode=0o600)
        path.write_text(secrets.token_urlsafe(48))
    return path.read_text().strip()


@dataclass(frozen=True)
class Endpoints:
    database_url: str
    nats_url: str


class NotRunning(RuntimeError):
    pass


def given_database_url() -> str | None:
    """DATABASE_URL, when set: a PostgreSQL URL, or a BadSetting (before, SQLAlchemy's traceback)."""
    url = os.environ.get("DATABASE_URL") or None
    if url is not None:
        try:
            checked_database_url(url)
        except ValueError as exc:
            raise BadSetting(f"DATABASE_URL {exc}") from None
    return url


def database_url() -> str:
    url = given_database_url() or read_runtime(data_dir()).get("DATABASE_URL")
    if not url:
        raise NotRunning("set DATABASE_URL (the owner's URL), or start `cortex run` (or `make run`).")
    return url


def endpoints() -> Endpoints:
    runtime = read_runtime(data_dir())
    database_url = given_database_url() or runtime.get("DATABASE_URL")
    nats_url = os.environ.get("NATS_URL") or runtime.get("NATS_URL")
    if not database_url or not nats_url:
        raise NotRunning(
            f"Cortex does not seem to be running: set DATABASE_URL and NATS_URL, or start `cortex run` (or `make run`) "
            f"(it writes {data_dir() / RUNTIME_FILE})."
        )
    return Endpoints(database_url, nats_url)
