"""Issuing HS256 bearer tokens (used by the CLI; the gateway only verifies them)."""

from datetime import UTC, datetime, timedelta

import jwt

from cortex_gateway.credentials import CLI_ISSUER


def issue_token(user_id: str, secret: str, *, lifetime: timedelta = timedelta(days=30)) -> str:
    now = datetime.now(UTC)
    claims = {"sub": user_id, "iss": CLI_ISSUER, "iat": now, "exp": now + lifetime}
    return jwt.encode(claims, secret, algorithm="HS256")
