"""The gateway's bearer-token check: a verified token is remembered for a while, never past its expiry."""

import time
from datetime import timedelta
from typing import Any

import jwt
import pytest

from cortex_gateway.credentials import VERIFIED_FOR_SECONDS, JwtVerifier
from cortex_gateway.problems import Problem
from cortex_gateway.settings import GatewaySettings
from cortex_gateway.tokens import issue_token

SECRET = "unit-test-secret-of-enough-length-0123456789"


class Clocks:
    """Wall and monotonic time as the test sets them."""

    def __init__(self) -> None:
        self.wall_offset = 0.0
        self.since_start = 1000.0

    def wall(self) -> float:
        return time.time() + self.wall_offset

    def monotonic(self) -> float:
        return self.since_start


@pytest.fixture
def clocks() -> Clocks:
    return Clocks()


@pytest.fixture
def verifier(clocks: Clocks) -> JwtVerifier:
    settings = GatewaySettings(database_url="postgresql://unused/x", secret=SECRET)
    return JwtVerifier(settings, wall_clock=clocks.wall, monotonic=clocks.monotonic)


@pytest.fixture
def decodes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The tokens whose signature was checked."""
    seen: list[str] = []
    real = jwt.decode

    def counting(token: str, *args: Any, **kwargs: Any) -> Any:
        seen.append(token)
        return real(token, *args, **kwargs)

    monkeypatch.setattr(jwt, "decode", counting)
    return seen


async def test_a_verified_token_is_not_verified_again_until_its_time_is_up(
    verifier: JwtVerifier, decodes: list[str], clocks: Clocks
) -> None:
    token = issue_token("alice", SECRET)
    assert [await verifier.user_id(token) for _ in range(3)] == ["alice"] * 3
    assert decodes == [token]

    clocks.since_start += VERIFIED_FOR_SECONDS
    assert await verifier.user_id(token) == "alice"
    assert decodes == [token, token]


async def test_a_remembered_token_that_expires_is_refused(
    verifier: JwtVerifier, decodes: list[str], clocks: Clocks
) -> None:
    token = issue_token("alice", SECRET, lifetime=timedelta(seconds=60))
    assert await verifier.user_id(token) == "alice"

    clocks.wall_offset = 61
    with pytest.raises(Problem) as refused:
        await verifier.user_id(token)
    assert (refused.value.status, refused.value.detail) == (401, "The bearer token has expired.")
    assert decodes == [token]  # refused from memory


async def test_a_token_that_fails_is_checked_every_time(verifier: JwtVerifier, decodes: list[str]) -> None:
    forged = issue_token("alice", "another-secret-of-enough-length-9876543210")
    for _ in range(2):
        with pytest.raises(Problem, match="not valid"):
            await verifier.user_id(forged)
    assert decodes == [forged, forged]
