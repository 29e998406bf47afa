"""For tests of plugins and of code that discovers them: an entry point without an installed package."""

from dataclasses import dataclass
from typing import Any


@dataclass
class FakeEntryPoint:
    """Loads `target`, or raises it when it is an exception (a plugin whose import fails)."""

    name: str
    value: str
    target: Any

    def load(self) -> Any:
        if isinstance(self.target, BaseException):
            raise self.target
        return self.target
