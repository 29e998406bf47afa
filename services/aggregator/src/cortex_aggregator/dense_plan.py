"""Whether the dense leg scans exactly or walks HNSW first, remembered for a while per org and filter.

Counting an org's embedded chunks (up to the threshold) costs a statement and thousands of index entries
per search; the answer changes only as the org grows past the threshold or enters the HNSW graph. A
stale answer costs time, not correctness: the exact scan is exact, a short HNSW walk falls back to it,
and an org is never out of the graph again once in it.
"""

import time
import uuid
from collections.abc import Awaitable, Callable

from cortex_aggregator.expiring_lru import ExpiringLru
from cortex_aggregator.filters import DocumentFilter

DEFAULT_TTL_SECONDS = 30.0
MAX_ENTRIES = 4096

Count = Callable[[], Awaitable[bool]]


class DensePlan:
    def __init__(
        self,
        ttl_seconds: float = DEFAULT_TTL_SECONDS,
        max_entries: int = MAX_ENTRIES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._exact: ExpiringLru[tuple[object, ...], bool] = ExpiringLru(ttl_seconds, max_entries, clock)

    async def exact(self, org: uuid.UUID, where: DocumentFilter, walks: Count) -> bool:
        """Exact unless `walks()` (the count) says the org is in the graph with candidates over the threshold."""
        key = (org, where.sql, *sorted((name, tuple(v)) for name, v in where.params.items()))
        exact = self._exact.get(key)
        if exact is None:
            exact = not await walks()
            self._exact.put(key, exact)
        return exact
