"""Real PostgreSQL + pgvector and NATS + JetStream for the tests.

DATABASE_URL / NATS_URL when given; otherwise the embedded servers, started once per test session in
a temporary directory. (No Docker engine answers on the machines this runs on, so testcontainers is
not used.)
"""

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cortex_embedded_servers import EmbeddedNats, EmbeddedPostgres
from cortex_store.tenancy import app_role_url


@dataclass(frozen=True)
class Infrastructure:
    database_url: str  # the owner: migrations, test set-up
    nats_url: str

    @property
    def app_database_url(self) -> str:
        """What the services connect with: the application role, under row-level security."""
        return os.environ.get("APP_DATABASE_URL") or app_role_url(self.database_url)


@contextmanager
def infrastructure() -> Iterator[Infrastructure]:
    database_url = os.environ.get("DATABASE_URL")
    nats_url = os.environ.get("NATS_URL")
    # A short path: PostgreSQL's unix socket path must stay under ~100 bytes.
    with tempfile.TemporaryDirectory(prefix="cx-", dir="/tmp") as scratch:
        postgres = None if database_url else EmbeddedPostgres(Path(scratch) / "pg")
        nats = None if nats_url else EmbeddedNats(Path(scratch) / "nats", port=0)
        try:
            yield Infrastructure(
                database_url=database_url or postgres.start(),  # type: ignore[union-attr]
                nats_url=nats_url or nats.start(),  # type: ignore[union-attr]
            )
        finally:
            if nats is not None:
                nats.stop()
            if postgres is not None:
                postgres.stop()
