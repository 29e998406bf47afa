"""Issuing bearer tokens (used by the CLI; the gateway only verifies them)."""

from datetime import UTC, datetime, timedelta

import jwt

from cortex_gateway.auth import JWT_ALGORITHM, JWT_ISSUER


def issue_token(user_id: str, secret: str, *, lifetime: timedelta = timedelta(days=30)) -> str:
    now = datetime.now(UTC)
    claims = {"sub": user_id, "iss": JWT_ISSUER, "iat": now, "exp": now + lifetime}
    return jwt.encode(claims, secret, algorithm=JWT_ALGORITHM)
