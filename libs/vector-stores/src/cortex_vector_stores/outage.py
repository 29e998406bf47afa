"""Fail fast while a store server is known to be down, instead of waiting out a timeout per call.

A server that hangs costs every caller its full timeout (10 s by default): every search before it falls
back to the lexical leg, every indexing transaction before it defers its mirror. After a failure the
store is not asked again for `retry_after_seconds`; calls meanwhile fail at once with the same reason.
The next call after that tries the server again, and a success ends the outage.
"""

import time
from dataclasses import dataclass

from cortex_contracts.vector_store import VectorStoreUnavailable


@dataclass
class Outage:
    retry_after_seconds: float
    _until: float = 0.0  # time.monotonic() before which the server is not tried
    _reason: str = ""

    def check(self) -> None:
        """Raise VectorStoreUnavailable while the last failure is recent."""
        left = self._until - time.monotonic()
        if left > 0:
            raise VectorStoreUnavailable(f"{self._reason} (tried again in {left:.1f} s)")

    def began(self, reason: str) -> None:
        self._until = time.monotonic() + self.retry_after_seconds
        self._reason = reason

    def ended(self) -> None:
        self._until = 0.0
