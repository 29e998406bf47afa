"""An identity provider for RS256 tests: RSA keys, a JWKS document served on loopback, signed tokens."""

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from tests.json_http import JsonHandler, serving

ISSUER = "https://idp.test"
AUDIENCE = "cortex"


def new_rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def jwk_of(key: rsa.RSAPrivateKey, kid: str) -> dict[str, Any]:
    public: dict[str, Any] = json.loads(RSAAlgorithm.to_jwk(key.public_key()))
    return {**public, "kid": kid, "use": "sig", "alg": "RS256"}


def rs256_token(
    key: rsa.RSAPrivateKey,
    kid: str,
    subject: str,
    *,
    issuer: str = ISSUER,
    audience: str = AUDIENCE,
    lifetime: timedelta = timedelta(minutes=5),
) -> str:
    now = datetime.now(UTC)
    claims = {"sub": subject, "iss": issuer, "aud": audience, "iat": now, "exp": now + lifetime}
    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": kid})


@contextmanager
def serving_jwks(keys: list[dict[str, Any]]) -> Iterator[str]:
    """Serve `{"keys": keys}` on a free loopback port in a thread; yields the JWKS URL."""

    class Handler(JsonHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server names them
            self.send_json(200, {"keys": keys})

    with serving(Handler, "jwks") as root:
        yield f"{root}/.well-known/jwks.json"
