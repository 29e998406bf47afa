"""Cross-Work search for stores that keep each Work apart (`namespace_per_work`): one query per Work,
merged by normalized score.

Scores from separate indexes are not on one scale (a namespace of near-duplicates scores high
everywhere), so each Work's list is min-max normalized before the merge; a Work's best hit becomes
1.0, its k-th 0.0. A list of one hit normalizes to 1.0.
"""

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Iterable, Sequence

from cortex_contracts.vector_store import VectorHit

SearchOneWork = Callable[[uuid.UUID], Awaitable[list[VectorHit]]]


def normalized(hits: Sequence[VectorHit]) -> list[VectorHit]:
    if not hits:
        return []
    high = max(hit.score for hit in hits)
    low = min(hit.score for hit in hits)
    span = high - low
    return [VectorHit(hit.document_id, hit.chunk_id, (hit.score - low) / span if span > 0 else 1.0) for hit in hits]


def merge_normalized(per_work: Iterable[Sequence[VectorHit]], k: int) -> list[VectorHit]:
    """The `k` best of every list after normalizing each one; ties keep the lists' order."""
    merged = [hit for hits in per_work for hit in normalized(hits)]
    merged.sort(key=lambda hit: hit.score, reverse=True)  # stable: equal scores stay in list order
    return merged[:k]


async def fan_out(work_ids: Iterable[uuid.UUID], search_one: SearchOneWork, k: int) -> list[VectorHit]:
    """Search each Work (concurrently, in a fixed order) and merge by normalized score."""
    ordered = sorted(set(work_ids))
    results = await asyncio.gather(*(search_one(work_id) for work_id in ordered))
    return merge_normalized(results, k)
