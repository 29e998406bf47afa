"""Request limits: bodies over the limit get 413 before they are read whole; each credential gets a
token bucket and 429 with Retry-After when it is empty.

The rate limit is kept per gateway copy (in memory): with N copies behind a balancer a credential
gets up to N times the configured rate.
"""

import hashlib
import math
import time
from dataclasses import dataclass

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from cortex_gateway.problems import PROBLEM_JSON, problem_bytes


async def _send_problem(
    scope: Scope, send: Send, status: int, detail: str, headers: dict[str, str] | None = None
) -> None:
    """The same problem document as the app's own (title, instance), sent before the app sees the request."""
    body = problem_bytes(status, detail, instance=scope["path"])
    raw_headers = [(b"content-type", PROBLEM_JSON.encode()), (b"content-length", str(len(body)).encode())]
    raw_headers += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    await send({"type": "http.response.body", "body": body})


class _TooLarge(HTTPException):
    """An HTTPException, so FastAPI passes it through its body parsing instead of answering 400."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__(413, f"Request bodies are limited to {max_bytes} bytes.")


class BodyLimit:
    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await _send_problem(scope, send, 413, f"Request bodies are limited to {self.max_bytes} bytes.")
            return
        received = 0
        started = False

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise _TooLarge(self.max_bytes)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except _TooLarge:
            if not started:
                await _send_problem(scope, send, 413, f"Request bodies are limited to {self.max_bytes} bytes.")


@dataclass
class _Bucket:
    tokens: float
    updated: float


def _credential(scope: Scope) -> bytes | None:
    """The credential the request authenticates with: the first Authorization header (the one
    authentication reads) without its scheme, so `bearer`, `BEARER` or extra spaces share one bucket."""
    header: tuple[bytes, bytes]
    for header in scope.get("headers", []):
        name, value = header
        if name == b"authorization":
            scheme, _, credential = value.strip().partition(b" ")
            return credential.strip() if scheme.lower() == b"bearer" and credential.strip() else value
    return None


class RateLimit:
    """Token bucket per credential (the Authorization header); anonymous requests are not limited here."""

    MAX_TRACKED = 100_000

    def __init__(self, app: ASGIApp, per_minute: int, burst: int) -> None:
        self.app = app
        self.rate = per_minute / 60.0
        self.burst = float(burst)
        self.buckets: dict[bytes, _Bucket] = {}

    def _bucket(self, key: bytes, now: float) -> _Bucket:
        """The credential's bucket, moved last: the dict runs from the least to the most recently used, and the
        first goes when MAX_TRACKED are kept. Before (QA 48), all were cleared then: a flood of made-up
        credentials gave every real one its burst again."""
        bucket = self.buckets.pop(key, None)
        if bucket is None:
            if len(self.buckets) >= self.MAX_TRACKED:
                del self.buckets[next(iter(self.buckets))]
            bucket = _Bucket(self.burst, now)
        self.buckets[key] = bucket
        return bucket

    def _take(self, key: bytes) -> float:
        """0 when allowed, else seconds until a token is free."""
        now = time.monotonic()
        bucket = self._bucket(key, now)
        bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.updated) * self.rate)
        bucket.updated = now
        if bucket.tokens >= 1:
            bucket.tokens -= 1
            return 0.0
        return (1 - bucket.tokens) / self.rate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        credential = _credential(scope) if scope["type"] == "http" else None
        if credential:
            wait = self._take(hashlib.sha256(credential).digest())
            if wait > 0:
                await _send_problem(
                    scope,
                    send,
                    429,
                    "Slow down: this credential's rate limit is spent.",
                    {"Retry-After": str(math.ceil(wait))},
                )
                return
        await self.app(scope, receive, send)
