"""An identity provider for RS256 tests: RSA keys, a JWKS document served on loopback, signed tokens."""

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

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
    document = json.dumps({"keys": keys}).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(document)))
            self.end_headers()
            self.wfile.write(document)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 — the base class's name
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, name="jwks", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/.well-known/jwks.json"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
