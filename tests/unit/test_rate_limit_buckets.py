"""The gateway's rate limit keeps at most MAX_TRACKED credentials' buckets, forgetting the least recently used
one; before (QA 48), it forgot them all, so a flood of made-up credentials gave every real one its burst again."""

import hashlib

import pytest

from cortex_gateway.limits import RateLimit


async def nothing(scope: object, receive: object, send: object) -> None:
    """The app behind the limit: not reached here."""


def key(name: str) -> bytes:
    return hashlib.sha256(name.encode()).digest()


def test_a_spent_credential_stays_spent_while_made_up_ones_come_and_go(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(RateLimit, "MAX_TRACKED", 3)
    limit = RateLimit(nothing, per_minute=1, burst=2)
    assert [limit._take(key("real")) for _ in range(2)] == [0.0, 0.0]
    assert limit._take(key("real")) > 0  # spent

    for made_up in ("a", "b", "c", "d"):  # more than MAX_TRACKED
        assert limit._take(key(made_up)) == 0.0
        assert limit._take(key("real")) > 0  # used meanwhile: still spent, not forgotten

    assert len(limit.buckets) == 3
    assert key("a") not in limit.buckets  # the least recently used went
