"""A bounded map ordered by use: the per-organization in-memory indexes keep their entries in one."""

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def entry_of(entries: OrderedDict[K, V], key: K, make: Callable[[], V], limit: int) -> V:
    """`key`'s entry, made if missing, now the most recently used; beyond `limit` entries the least
    recently used are dropped."""
    entry = entries.get(key)
    if entry is None:
        entry = entries[key] = make()
        while len(entries) > limit:
            entries.popitem(last=False)
    entries.move_to_end(key)
    return entry
