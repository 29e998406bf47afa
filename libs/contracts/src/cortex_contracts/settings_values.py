"""Values read from the environment, checked as they are read: a wrong one stops a service at start with
one line naming the variable (cortex_supervision.service_run), not a traceback at its first use."""

import re
from typing import Annotated

from pydantic import AfterValidator, Field, SecretStr

DATABASE_URL = re.compile(r"^postgres(?:ql)?(?:\+\w+)?://", re.IGNORECASE)
HTTP_URL = re.compile(r"^https?://[^/\s]", re.IGNORECASE)
INT32_MAX = 2**31 - 1  # PostgreSQL's integer: a setting compared with one in SQL must fit


def checked_database_url(url: str) -> str:
    if DATABASE_URL.match(url) is None:
        raise ValueError("must be a PostgreSQL URL, postgresql://user:password@host:port/database")
    return url


def _http_url(url: str) -> str:
    if HTTP_URL.match(url) is None:
        raise ValueError("must be an http:// or https:// URL")
    return url


def _not_empty(secret: SecretStr) -> SecretStr:
    if not secret.get_secret_value().strip():  # as the CLI refuses it: spaces are a template's blank, not a key
        raise ValueError("must not be empty")
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
Secret = Annotated[SecretStr, AfterValidator(_not_empty)]
MAX_PORT = 65535
Port = Annotated[int, Field(ge=1, le=MAX_PORT)]
