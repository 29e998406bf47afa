"""Fan-out per Work for stores that keep Works apart: per-list min-max normalization, then one merge."""

import asyncio
import uuid

import pytest

from cortex_contracts.vector_store import VectorHit
from cortex_vector_stores.fanout import fan_out, merge_normalized, normalized

DOC = [uuid.UUID(int=i) for i in range(10)]


def hit(doc: int, chunk: int, score: float) -> VectorHit:
    return VectorHit(DOC[doc], chunk, score)


def test_normalized_maps_each_list_onto_zero_to_one() -> None:
    assert [h.score for h in normalized([hit(0, 1, 0.9), hit(1, 2, 0.7), hit(2, 3, 0.5)])] == pytest.approx(
        [1.0, 0.5, 0.0]
    )
    assert [h.score for h in normalized([hit(0, 1, 0.3)])] == [1.0]
    assert [h.score for h in normalized([hit(0, 1, 0.4), hit(1, 2, 0.4)])] == [1.0, 1.0]
    assert normalized([]) == []


def test_merge_puts_each_works_best_first_whatever_its_raw_scale() -> None:
    # Work A's scores are all high (near-duplicates), Work B's all low: raw scores would bury B.
    work_a = [hit(0, 1, 1.0), hit(1, 2, 0.875), hit(2, 3, 0.75)]
    work_b = [hit(3, 4, 0.5), hit(4, 5, 0.25), hit(5, 6, 0.0)]
    merged = merge_normalized([work_a, work_b], k=4)
    assert [h.chunk_id for h in merged] == [1, 4, 2, 5]
    assert merge_normalized([work_a, work_b], k=0) == []
    assert merge_normalized([[], work_b], k=2) == [hit(3, 4, 0.5), hit(4, 5, 0.25)]  # each with its own score


async def test_fan_out_queries_every_work_once_and_merges() -> None:
    works = [uuid.UUID(int=100 + i) for i in range(3)]
    per_work = {
        works[0]: [hit(0, 1, 0.9), hit(1, 2, 0.1)],
        works[1]: [hit(2, 3, 0.5)],
        works[2]: [],
    }
    asked: list[uuid.UUID] = []

    async def search_one(work_id: uuid.UUID) -> list[VectorHit]:
        asked.append(work_id)
        await asyncio.sleep(0)
        return per_work[work_id]

    merged = await fan_out([works[2], works[0], works[1], works[0]], search_one, k=10)
    assert sorted(asked) == sorted(works)  # each Work once, duplicates in the input collapsed
    assert [(h.chunk_id, h.score) for h in merged] == [(1, 0.9), (3, 0.5), (2, 0.1)]
