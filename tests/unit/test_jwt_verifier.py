"""The gateway's bearer-token check: a verified token is remembered for a while, never past its expiry."""

import asyncio
import time
from datetime import timedelta
from typing import Any

import jwt
import pytest

from cortex_embedded_servers import free_port
from cortex_gateway.credentials import VERIFIED_FOR_SECONDS, JwtVerifier
from cortex_gateway.problems import Problem
from cortex_gateway.settings import GatewaySettings
from cortex_gateway.tokens import issue_token
from tests.jwks import AUDIENCE, ISSUER, jwk_of, new_rsa_key, rs256_token, serving_jwks

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


def rs256_verifier(jwks_url: str, cache_seconds: float) -> JwtVerifier:
    settings = GatewaySettings(
        database_url="postgresql://unused/x", secret=SECRET, jwks_url=jwks_url, jwt_issuer=ISSUER, jwt_audience=AUDIENCE
    )
    return JwtVerifier(settings, jwks_cache_seconds=cache_seconds)


async def test_a_key_dropped_from_the_jwks_stops_counting_once_the_key_set_is_fetched_again() -> None:
    """Before: PyJWT's per-key cache, which never expires, kept accepting a dropped (compromised) key."""
    old, new = new_rsa_key(), new_rsa_key()
    keys = [jwk_of(old, "old"), jwk_of(new, "new")]
    with serving_jwks(keys) as url:
        verifier = rs256_verifier(url, cache_seconds=0.2)
        assert await verifier.user_id(rs256_token(old, "old", "alice")) == "alice"
        keys.remove(jwk_of(old, "old"))  # the identity provider rotates it out
        await asyncio.sleep(0.3)

        with pytest.raises(Problem) as refused:
            await verifier.user_id(rs256_token(old, "old", "mallory"))
        assert refused.value.status == 401
        assert await verifier.user_id(rs256_token(new, "new", "bob")) == "bob"


async def test_an_identity_provider_that_cannot_be_reached_is_a_503_not_a_bad_token() -> None:
    key = new_rsa_key()
    nothing_listens = f"http://127.0.0.1:{free_port('127.0.0.1')}/.well-known/jwks.json"
    verifier = rs256_verifier(nothing_listens, cache_seconds=300)

    with pytest.raises(Problem) as unavailable:
        await verifier.user_id(rs256_token(key, "k", "alice"))

    assert (unavailable.value.status, unavailable.value.headers) == (503, {"Retry-After": "5"})
