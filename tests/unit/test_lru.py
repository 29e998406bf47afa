"""The per-organization index map: made on first use, most recently used kept, the oldest dropped."""

from collections import OrderedDict

from cortex_aggregator.lru import entry_of


def test_entries_are_made_once_and_the_least_recently_used_dropped() -> None:
    entries: OrderedDict[str, list[str]] = OrderedDict()
    a = entry_of(entries, "a", list, 2)
    entry_of(entries, "b", list, 2)
    assert entry_of(entries, "a", list, 2) is a  # used again: now the most recent
    entry_of(entries, "c", list, 2)
    assert list(entries) == ["a", "c"]
