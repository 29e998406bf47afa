"""Values read from the environment, checked as they are read: a wrong one stops a service at start with
one line naming the variable (cortex_supervision.service_run), not a traceback at its first use."""

import re
from typing import Annotated
from urllib.parse import parse_qs, urlsplit

from pydantic import AfterValidator, Field, SecretStr

DATABASE_URL = re.compile(r"^postgres(?:ql)?(?:\+\w+)?://", re.IGNORECASE)
HTTP_URL = re.compile(r"^https?://[^/\s]", re.IGNORECASE)
INT32_MAX = 2**31 - 1  # PostgreSQL's integer: a setting compared with one in SQL must fit


def checked_database_url(url: str) -> str:
    if DATABASE_URL.match(url) is None:
        raise ValueError("must be a PostgreSQL URL, postgresql://user:password@host:port/database")
    for seconds in parse_qs(urlsplit(url).query).get("connect_timeout", []):
        try:
            float(seconds)
        except ValueError:
            raise ValueError(f"connect_timeout={seconds} is not a number of seconds") from None
    return url


def _http_url(url: str) -> str:
    if HTTP_URL.match(url) is None:
        raise ValueError("must be an http:// or https:// URL")
    return url


MIN_SECRET_BYTES = 32  # HS256 wants a key at least as long as its hash (RFC 7518 §3.2)
PLACEHOLDER = re.compile(r"change[-_ ]?me", re.IGNORECASE)  # a template's value, published with it


def secret_problem(secret: str) -> str | None:
    """Why `secret` cannot sign tokens, or None. Anyone who knows or guesses the key can make a token for any
    member of any organization."""
    if not secret.strip():  # spaces are a template's blank, not a key
        return "must not be empty"
    if len(secret.encode()) < MIN_SECRET_BYTES:
        return f"must be at least {MIN_SECRET_BYTES} bytes (openssl rand -base64 48 makes one)"
    if PLACEHOLDER.search(secret):
        return "is a template's placeholder, known to anyone who read it (openssl rand -base64 48 makes one)"
    return None


def _strong(secret: SecretStr) -> SecretStr:
    if problem := secret_problem(secret.get_secret_value()):
        raise ValueError(problem)
    return secret


def _listen_host(host: str) -> str:
    if not host.strip():  # uvicorn would listen on every interface: the API open to the network
        raise ValueError(
            "must not be empty: leave it unset for 127.0.0.1, or name 0.0.0.0 to listen on every interface"
        )
    return host


DatabaseUrl = Annotated[str, AfterValidator(checked_database_url)]
ListenHost = Annotated[str, AfterValidator(_listen_host)]
HttpUrl = Annotated[str, AfterValidator(_http_url)]
Secret = Annotated[SecretStr, AfterValidator(_strong)]
MAX_PORT = 65535
Port = Annotated[int, Field(ge=1, le=MAX_PORT)]
