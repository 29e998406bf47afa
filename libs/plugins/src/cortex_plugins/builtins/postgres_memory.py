"""memory `postgres` (the default): describes the built-in agent memory; it runs in the services.

`remember` is a `memory.<orgId>.entry.remembered` event (or `POST /api/memory/entries`) that the indexer
stores in `memory_entry`; `recall` is the aggregator's hybrid ranking over those entries.
"""


class PostgresMemory:
    name = "postgres"
    description = "memory_entry in PostgreSQL: remembered by the indexer, recalled by the aggregator (hybrid)"


def create() -> PostgresMemory:
    return PostgresMemory()
