"""Whether the dense leg scans exactly or walks HNSW first, remembered for a while per org and filter.

Counting an org's embedded chunks (up to the threshold) costs a statement and thousands of index entries
per search; the answer changes only as the org grows past the threshold. A stale answer costs time, not
correctness: the exact scan is exact, and a short HNSW walk falls back to it.
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

    async def exact(self, org: uuid.UUID, where: DocumentFilter, too_many: Count) -> bool:
        """Exact unless `too_many()` (the count) says the candidates exceed the threshold."""
        key = (org, where.sql, *sorted((name, tuple(v)) for name, v in where.params.items()))
        exact = self._exact.get(key)
        if exact is None:
            exact = not await too_many()
            self._exact.put(key, exact)
        return exact
