"""Find a category's entry points (importlib.metadata), without importing anything they point at."""

from collections.abc import Iterable
from importlib.metadata import entry_points
from typing import Any, Protocol


class EntryPointLike(Protocol):
    """What the runtime needs of an `importlib.metadata.EntryPoint` (tests pass fakes)."""

    @property
    def name(self) -> str: ...

    @property
    def value(self) -> str: ...

    def load(self) -> Any: ...


def find_entry_points(group: str) -> list[EntryPointLike]:
    """The group's entry points by name; one registered twice identically (two installs) counts once."""
    found: Iterable[EntryPointLike] = entry_points(group=group)
    unique = {(entry.name, entry.value): entry for entry in found}
    return sorted(unique.values(), key=lambda entry: (entry.name, entry.value))
