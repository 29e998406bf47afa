"""Whether the dense leg scans exactly or walks HNSW first, remembered for a while per org and filter.

Counting an org's embedded chunks (up to the threshold) costs a statement and thousands of index entries
per search; the answer changes only as the org grows past the threshold. A stale answer costs time, not
correctness: the exact scan is exact, and a short HNSW walk falls back to it.
"""

import time
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable

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
        self._ttl = ttl_seconds
        self._max = max_entries
        self._clock = clock
        self._exact: OrderedDict[tuple[object, ...], tuple[float, bool]] = OrderedDict()

    async def exact(self, org: uuid.UUID, where: DocumentFilter, too_many: Count) -> bool:
        """Exact unless `too_many()` (the count) says the candidates exceed the threshold."""
        key = (org, where.sql, *sorted((name, tuple(v)) for name, v in where.params.items()))
        now = self._clock()
        cached = self._exact.get(key)
        if cached is not None and now - cached[0] < self._ttl:
            self._exact.move_to_end(key)
            return cached[1]
        exact = not await too_many()
        self._exact[key] = (now, exact)
        self._exact.move_to_end(key)
        while len(self._exact) > self._max:
            self._exact.popitem(last=False)
        return exact
