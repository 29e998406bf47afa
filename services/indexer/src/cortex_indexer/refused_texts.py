"""Texts the embedder refused alone, each set aside for a while and then tried again.

A refusal may be the text's fault for good (longer than the endpoint's context) or a passing one (a proxy
that cut the answer short, a NaN from a model under load): set aside for ever, a passage would stay
lexical-only until the indexer restarted, and nothing would say so (QA 40). So each is tried again after
`first_delay`, then after twice as long each time it is refused again, up to `longest_delay`: a text
refused for good costs one call of its own an hour, and a passing fault heals by itself.
"""

import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

Key = TypeVar("Key", bound=Hashable)


@dataclass
class RefusedTexts(Generic[Key]):
    first_delay: float = 60.0
    longest_delay: float = 3600.0
    clock: Callable[[], float] = time.monotonic
    _refusals: dict[Key, tuple[int, float]] = field(default_factory=dict)  # key -> (times refused, tried again at)

    def set_aside(self) -> list[Key]:
        """The keys not to try yet."""
        now = self.clock()
        return [key for key, (_, again_at) in self._refusals.items() if again_at > now]

    def refused(self, key: Key) -> None:
        times = self._refusals.get(key, (0, 0.0))[0] + 1
        delay = min(self.first_delay * 2 ** (times - 1), self.longest_delay)
        self._refusals[key] = (times, self.clock() + delay)

    def embedded(self, key: Key) -> None:
        self._refusals.pop(key, None)

    def __contains__(self, key: object) -> bool:
        return key in self._refusals

    def __len__(self) -> int:
        return len(self._refusals)
