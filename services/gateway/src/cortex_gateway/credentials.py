"""Verifying who is calling: a JWT (HS256 with the deployment's secret, or RS256 against a JWKS URL with
issuer and audience checks), or an API key of a service account or agent.

API keys look like `cxk_<organization id hex>_<secret>`; only their SHA-256 is stored. Naming the
organization in the key lets the lookup run under that organization's row-level security.
"""

import asyncio
import hashlib
import logging
import secrets
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import jwt

from cortex_gateway.problems import Problem
from cortex_gateway.settings import GatewaySettings

log = logging.getLogger(__name__)

API_KEY_PREFIX = "cxk_"
CLI_ISSUER = "cortex"


@dataclass(frozen=True)
class ApiKeyClaim:
    organization_id: uuid.UUID
    key_hash: str


def unauthorized(detail: str) -> Problem:
    return Problem(401, detail, headers={"WWW-Authenticate": "Bearer"})


def hash_api_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def new_api_key(organization_id: uuid.UUID) -> str:
    return f"{API_KEY_PREFIX}{organization_id.hex}_{secrets.token_urlsafe(32)}"


def parse_api_key(token: str) -> ApiKeyClaim:
    org_hex, _, secret = token.removeprefix(API_KEY_PREFIX).partition("_")
    try:
        organization_id = uuid.UUID(hex=org_hex)
    except ValueError as exc:
        raise unauthorized("The API key is not valid.") from exc
    if len(secret) < 20:
        raise unauthorized("The API key is not valid.")
    return ApiKeyClaim(organization_id, hash_api_key(token))


VERIFIED_TOKENS = 4096  # remembered verified tokens, least recently used dropped first
JWKS_CACHE_SECONDS = 300.0  # a fetched key set is kept this long: a key dropped from it stops counting then
JWKS_TIMEOUT_SECONDS = 5.0  # a hung identity provider costs a request this much (PyJWT's default: 30 s)
VERIFIED_FOR_SECONDS = JWKS_CACHE_SECONDS  # at most, as long as a fetched key set is kept


@dataclass(frozen=True)
class _Verified:
    subject: str
    expires_at: float  # the token's `exp`, epoch seconds
    checked_at: float  # monotonic


def _storable(text: str) -> bool:
    """Whether PostgreSQL takes `text` as a value: no NUL, and UTF-8 for every character."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return "\x00" not in text


class JwtVerifier:
    """Verifies bearer JWTs; a token verified in the last `VERIFIED_FOR_SECONDS` is not verified again
    (~0.25 ms a request: HMAC and JSON), though its expiry still is. Membership is not remembered here:
    it is looked up on every request."""

    def __init__(
        self,
        settings: GatewaySettings,
        *,
        wall_clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        jwks_cache_seconds: float = JWKS_CACHE_SECONDS,
    ) -> None:
        self._settings = settings
        self._wall_clock, self._monotonic = wall_clock, monotonic
        # Only the key set is cached, for its lifespan. PyJWT's `cache_keys` kept each key it had used with no
        # expiry, checked first: a key the identity provider dropped (compromised) was accepted until a restart.
        self._jwks = (
            jwt.PyJWKClient(settings.jwks_url, lifespan=jwks_cache_seconds, timeout=JWKS_TIMEOUT_SECONDS)
            if settings.jwks_url
            else None
        )
        self._verified: OrderedDict[str, _Verified] = OrderedDict()

    async def user_id(self, token: str) -> str:
        known = self._verified.get(token)
        if known is not None and self._monotonic() - known.checked_at < VERIFIED_FOR_SECONDS:
            if self._wall_clock() >= known.expires_at:
                del self._verified[token]
                raise unauthorized("The bearer token has expired.")
            self._verified.move_to_end(token)
            return known.subject
        subject, expires_at = await self._verify(token)
        self._verified[token] = _Verified(subject, expires_at, self._monotonic())
        if len(self._verified) > VERIFIED_TOKENS:
            self._verified.popitem(last=False)
        return subject

    async def _verify(self, token: str) -> tuple[str, float]:
        """The token's subject and expiry, once its signature and claims check out."""
        settings = self._settings
        try:
            if self._jwks is not None and jwt.get_unverified_header(token).get("alg") == "RS256":
                # Fetching the key set is blocking I/O (cached afterwards): keep it off the event loop.
                key = await asyncio.to_thread(self._jwks.get_signing_key_from_jwt, token)
                claims = jwt.decode(
                    token,
                    key.key,
                    algorithms=["RS256"],
                    issuer=settings.jwt_issuer,
                    audience=settings.jwt_audience,
                    options={"require": ["sub", "exp", "iss", "aud"]},
                )
            else:
                claims = jwt.decode(
                    token,
                    settings.secret.get_secret_value(),
                    algorithms=["HS256"],
                    issuer=CLI_ISSUER,
                    options={"require": ["sub", "exp", "iss"]},
                )
        except jwt.ExpiredSignatureError as exc:
            raise unauthorized("The bearer token has expired.") from exc
        except jwt.PyJWKClientConnectionError as exc:  # the identity provider, not the token
            log.warning("cannot fetch the JWKS: %s", exc)
            raise Problem(
                503, "The identity provider's key set cannot be fetched; try again.", headers={"Retry-After": "5"}
            ) from exc
        except (jwt.PyJWTError, ValueError) as exc:
            raise unauthorized("The bearer token is not valid.") from exc
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject:
            raise unauthorized("The bearer token names no user.")
        if not _storable(subject):
            raise unauthorized("The bearer token's user is not text PostgreSQL can hold (NUL or a lone surrogate).")
        return subject, float(claims["exp"])
