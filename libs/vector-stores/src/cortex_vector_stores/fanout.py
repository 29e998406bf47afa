"""Cross-Work search for stores that keep each Work apart (`namespace_per_work`): one query per Work,
merged by normalized score.

Scores from separate indexes are not on one scale (a namespace of near-duplicates scores high
everywhere), so each Work's list is ranked min-max normalized in the merge; a Work's best hit ranks as
1.0, its k-th as 0.0, a list of one hit as 1.0. The hits keep their own scores.
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
    """The `k` best of every list, ranked by their normalized scores (ties keep the lists' order). Each hit keeps
    its own score, a cosine as the protocol has it: the feed compares it with its similarity floor."""
    ranked = [(rank.score, hit) for hits in per_work for rank, hit in zip(normalized(hits), hits, strict=True)]
    ranked.sort(key=lambda pair: pair[0], reverse=True)  # stable: equal scores stay in list order
    return [hit for _, hit in ranked[:k]]


async def fan_out(work_ids: Iterable[uuid.UUID], search_one: SearchOneWork, k: int) -> list[VectorHit]:
    """Search each Work (concurrently, in a fixed order) and merge by normalized score."""
    ordered = sorted(set(work_ids))
    results = await asyncio.gather(*(search_one(work_id) for work_id in ordered))
    return merge_normalized(results, k)
