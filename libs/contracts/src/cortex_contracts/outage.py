"""Fail fast while a server a plugin calls is known to be down, instead of waiting out its timeouts per call.

A server that hangs costs every caller its full timeout (and an embedder's retries): every search before
it falls back to the lexical leg, every document before it is indexed lexical-only or marked for the
backfill. After a failure the server is not asked again for `fail_fast_seconds`; calls meanwhile are
refused at once with the same reason. The next call after that tries the server again, and a success (or
a health probe that passes, which is never refused) ends the outage.
"""

import time
from dataclasses import dataclass


@dataclass
class Outage:
    fail_fast_seconds: float
    _until: float = 0.0  # time.monotonic() before which the server is not tried
    _reason: str = ""

    def refusal(self) -> str | None:
        """Why a call is refused without trying the server; None: try it."""
        left = self._until - time.monotonic()
        return f"{self._reason} (tried again in {left:.1f} s)" if left > 0 else None

    def began(self, reason: str) -> None:
        self._until = time.monotonic() + self.fail_fast_seconds
        self._reason = reason

    def ended(self) -> None:
        self._until = 0.0
