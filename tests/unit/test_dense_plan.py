"""The exact-or-HNSW decision is counted once per org and filter for a while, then counted again."""

import uuid

from cortex_aggregator.dense_plan import DensePlan
from cortex_aggregator.filters import document_filter
from cortex_contracts.rpc import FeedFilters


class Counter:
    def __init__(self, too_many: bool) -> None:
        self.calls = 0
        self.too_many = too_many

    async def __call__(self) -> bool:
        self.calls += 1
        return self.too_many


async def test_counts_once_per_org_and_filter_until_it_expires() -> None:
    clock = [100.0]
    plan = DensePlan(ttl_seconds=30, clock=lambda: clock[0])
    org, other = uuid.uuid4(), uuid.uuid4()
    everything = document_filter(FeedFilters())
    notes = document_filter(FeedFilters(type=["note"]))
    big, small = Counter(too_many=True), Counter(too_many=False)

    assert await plan.exact(org, everything, big) is False
    assert await plan.exact(org, everything, big) is False
    assert big.calls == 1
    assert await plan.exact(org, notes, small) is True  # another filter: its own count
    assert await plan.exact(other, everything, small) is True  # another org: its own count
    assert small.calls == 2

    clock[0] += 31
    assert await plan.exact(org, everything, big) is False
    assert big.calls == 2


async def test_holds_at_most_max_entries() -> None:
    plan = DensePlan(max_entries=2)
    counter = Counter(too_many=False)
    everything = document_filter(FeedFilters())
    first, second, third = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    for org in (first, second, third, first):
        await plan.exact(org, everything, counter)
    assert counter.calls == 4  # the first org was dropped to make room for the third
