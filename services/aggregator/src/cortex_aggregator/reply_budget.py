"""An answer that fits in one NATS message: the best-ranked items while their JSON fits the budget.

A recall of 100 entries, each up to 8192 characters with 16 KiB of metadata, beside an external backend's
2 MiB answer (its text twice: as sent and fenced) came to more than the 8 MB the embedded NATS carries,
and the caller got a 502 (QA 36)."""

from collections.abc import Sequence
from typing import TypeVar

from cortex_contracts.base import WireModel

# What the reply holds besides its items: the reply envelope, the sources' statuses, the message's headers.
MARGIN_BYTES = 64 * 1024

Item = TypeVar("Item", bound=WireModel)


def fitting(items: Sequence[Item], budget: int) -> tuple[list[Item], int]:
    """The leading items whose JSON (with a separator each) fits in `budget` bytes, and the bytes they take."""
    kept: list[Item] = []
    used = 0
    for item in items:
        size = len(item.to_wire()) + 1
        if used + size > budget:
            break
        kept.append(item)
        used += size
    return kept, used
