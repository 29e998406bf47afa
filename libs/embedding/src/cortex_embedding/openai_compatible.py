"""Any OpenAI-compatible `/v1/embeddings` endpoint: OpenAI, Ollama, vLLM, Text Embeddings Inference.

Inputs go in batches of `max_batch`, one request each. A request has one deadline, `timeout_seconds`,
for all of it: connecting, sending, reading the whole answer, and its retries with the waits between
them (QA 34: httpx's timeouts bound each read, so an endpoint trickling its answer held a call for as
long as it trickled; and one request's attempts and backoff held every document queued behind it for
~155 s at the start of an outage). Within it, a request is retried with exponential backoff and jitter on
connection errors, 408, 429 (honouring `Retry-After`) and 5xx; a retry whose wait would end past the
deadline is not made, the request fails at once. Other 4xx answers are not retried. Once a request has
failed, calls are refused at once for `fail_fast_seconds` (see `cortex_contracts.outage`): a hung
endpoint costs one request's deadline, not every document's. An answer is read streamed and refused
past the size its vectors need (`answer_size`). Vectors come back normalized to unit length (cosine = dot
product).

`embed` is blocking, as the `Embedder` protocol says; its requests run on an event loop of the
embedder's own (`loop_thread`), where asyncio can bound a whole exchange.

Configured from the environment, prefix `CORTEX_EMBEDDER_OPENAI_` (`openai_settings`); `create()` is the
plugin factory.
"""

import asyncio
import json
import logging
import math
import random
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from cortex_contracts.outage import Outage
from cortex_embedding.answer_size import answer_limit, read_start, read_within
from cortex_embedding.errors import EmbedderUnavailable, EmbeddingRejected, InvalidEmbeddingResponse
from cortex_embedding.loop_thread import LoopThread
from cortex_embedding.openai_settings import OpenAIEmbedderSettings, settings_from_environment

# The settings too: the services and their tests know them as `openai_compatible.…`.
__all__ = [
    "OpenAICompatibleEmbedder",
    "OpenAIEmbedderSettings",
    "create",
    "normalized",
    "retry_after_seconds",
    "settings_from_environment",
]

log = logging.getLogger(__name__)

RETRIED_STATUSES = frozenset({408, 429})
DIMENSION_PROBE = "dimension probe"
HEALTH_PROBE = "health check"
HEALTH_TIMEOUT_SECONDS = 5.0
MAX_DETAIL_CHARS = 300


def retry_after_seconds(value: str | None, now: datetime | None = None) -> float | None:
    """`Retry-After` as seconds: either delta-seconds or an HTTP date. None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def normalized(vector: list[float]) -> list[float]:
    """Of unit length. A vector with NaN or infinite values, or all zeros, is refused: it has no direction,
    and PostgreSQL refuses NaN (QA 29: every document then failed its deliveries, every search a 502)."""
    norm = math.sqrt(math.fsum(x * x for x in vector))
    if not math.isfinite(norm):
        raise InvalidEmbeddingResponse("a vector with NaN or infinite values")
    if norm == 0:
        raise InvalidEmbeddingResponse("a vector of zeros")
    return [x / norm for x in vector]


def _detail(body: bytes) -> str:
    return " ".join(body.decode(errors="replace").split())[:MAX_DETAIL_CHARS]


@dataclass(frozen=True)
class _Answer:
    status: int
    retry_after: str | None
    body: bytes  # an error's: only its start


class OpenAICompatibleEmbedder:
    name = "openai"  # the plugin; `model` is what the index records

    def __init__(self, settings: OpenAIEmbedderSettings) -> None:
        if settings.send_dimensions and settings.dimension is None:
            raise ValueError("send_dimensions needs a configured dimension")
        self.settings = settings
        self.model = settings.model
        self.url = settings.base_url.rstrip("/") + "/embeddings"
        self._dimension = settings.dimension
        self._headers = {"Content-Type": "application/json"}
        if settings.api_key is not None:
            self._headers["Authorization"] = f"Bearer {settings.api_key.get_secret_value()}"
        self._loop: LoopThread | None = None  # started by the first call
        self._loop_lock = threading.Lock()
        self._client: httpx.AsyncClient | None = None  # used on `_loop` only
        self.outage = Outage(settings.fail_fast_seconds)

    @property
    def dimension(self) -> int:
        """The configured (or expected) dimension, else the length the endpoint answers with now: a blocking
        call, not kept. One answer does not set it for good (QA 29: an endpoint that answered wrong once at
        start had every right answer after it refused): `expect_dimension` does."""
        if self._dimension is not None:
            return self._dimension
        return len(self.embed([DIMENSION_PROBE])[0])

    @property
    def known_dimension(self) -> int | None:
        """The dimension if configured or expected, without calling the endpoint."""
        return self._dimension

    def expect_dimension(self, dimension: int) -> None:
        """From now on refuse vectors of another length: the index's dimension, where none is configured."""
        if self.settings.dimension is None:
            self._dimension = dimension

    def embed(self, texts: list[str]) -> list[list[float]]:
        return self._loop_thread().run(self._embed(texts))

    def close(self) -> None:
        with self._loop_lock:
            loop, self._loop = self._loop, None
        if loop is not None:
            loop.run(self._close_client())
            loop.close()

    async def health(self) -> str | None:
        """One small request, no retries: None when the endpoint embeds, else what went wrong."""
        timeout = min(self.settings.timeout_seconds, HEALTH_TIMEOUT_SECONDS)
        try:
            client = httpx.AsyncClient(timeout=None, headers=self._headers)  # noqa: S113 — bounded just below
            async with client, asyncio.timeout(timeout):
                answer = await self._exchange(client, [HEALTH_PROBE])
            if answer.status != 200:
                return f"HTTP {answer.status}: {_detail(answer.body)}"
            self._vectors(answer.body, 1)
        except TimeoutError:
            return f"no complete answer within {timeout:g} s"
        except httpx.HTTPError as exc:
            return f"unreachable: {type(exc).__name__}: {exc}"
        except InvalidEmbeddingResponse as exc:
            return str(exc)
        self.outage.ended()
        return None

    def _loop_thread(self) -> LoopThread:
        with self._loop_lock:
            if self._loop is None:
                self._loop = LoopThread(name=f"embedder {self.model}")
            return self._loop

    def _http(self) -> httpx.AsyncClient:
        """The connection pool, made on the embedder's loop (it belongs to the loop it is used on)."""
        if self._client is None:
            # No per-phase timeouts: each request's deadline bounds its whole exchange (`_embed_batch`).
            self._client = httpx.AsyncClient(timeout=None, headers=self._headers)  # noqa: S113
        return self._client

    async def _close_client(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def _payload(self, texts: list[str]) -> dict[str, Any]:
        payload: dict[str, Any] = {"model": self.settings.model, "input": texts}
        if self.settings.send_dimensions:
            payload["dimensions"] = self.settings.dimension
        return payload

    def _backoff(self, attempt: int) -> float:
        """Exponential, capped, with "equal jitter": half fixed, half random, so copies do not retry in step."""
        ceiling = min(self.settings.backoff_max_seconds, self.settings.backoff_initial_seconds * 2.0**attempt)
        jitter: float = random.uniform(0, ceiling / 2)  # noqa: S311 — jitter, not cryptography
        return ceiling / 2 + jitter

    async def _embed(self, texts: list[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.settings.max_batch):
            vectors.extend(await self._embed_batch(texts[start : start + self.settings.max_batch]))
        return vectors

    async def _exchange(self, client: httpx.AsyncClient, texts: list[str]) -> _Answer:
        """One POST, its answer read streamed: a vectors' answer up to the size they need, an error's start."""
        async with client.stream("POST", self.url, json=self._payload(texts)) as response:
            try:
                if response.status_code == 200:
                    body = await read_within(response, answer_limit(len(texts), self._dimension))
                else:
                    body = await read_start(response)
            except httpx.DecodingError as exc:  # a compressed body that does not decompress
                raise InvalidEmbeddingResponse(f"an answer that cannot be decoded: {exc}") from exc
            return _Answer(response.status_code, response.headers.get("Retry-After"), body)

    async def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        settings = self.settings
        loop = asyncio.get_running_loop()
        deadline = loop.time() + settings.timeout_seconds
        attempts = settings.max_retries + 1
        for attempt in range(1, attempts + 1):
            if (refusal := self.outage.refusal()) is not None:  # also between retries: another call saw it fail
                raise EmbedderUnavailable(refusal)
            retry_after: float | None = None
            try:
                async with asyncio.timeout_at(deadline):
                    answer = await self._exchange(self._http(), texts)
            except TimeoutError:
                failure = f"Timeout: no complete answer within the request's deadline ({settings.timeout_seconds:g} s)"
            except httpx.TransportError as exc:  # connect errors, broken connections
                failure = f"{type(exc).__name__}: {exc}"
            else:
                if answer.status == 200:
                    vectors = self._vectors(answer.body, len(texts))
                    self.outage.ended()
                    return vectors
                if answer.status not in RETRIED_STATUSES and answer.status < 500:
                    raise EmbeddingRejected(answer.status, _detail(answer.body))
                failure = f"HTTP {answer.status}: {_detail(answer.body)}"
                retry_after = retry_after_seconds(answer.retry_after)
            delay = self._backoff(attempt - 1)
            if retry_after is not None:
                delay = min(retry_after, settings.backoff_max_seconds)
            if attempt < attempts and loop.time() + delay < deadline:
                log.warning(
                    "embedding request failed (%s); retry %d/%d in %.2fs", failure, attempt, attempts - 1, delay
                )
                await asyncio.sleep(delay)
                continue
            # Out of attempts, or of time: a wait past the deadline fails now, so the fail-fast window starts.
            out_of_time = attempt < attempts and loop.time() < deadline
            late = f"; a retry in {delay:.2f}s would end past the deadline" if out_of_time else ""
            reason = f"{self.url} failed {attempt} attempt(s); last: {failure}{late}"
            self.outage.began(reason)
            raise EmbedderUnavailable(reason)
        raise AssertionError("unreachable")  # pragma: no cover — the loop returns or raises

    def _vectors(self, body: bytes, expected: int) -> list[list[float]]:
        try:
            items = json.loads(body)["data"]
            ordered = sorted(items, key=lambda item: int(item["index"])) if all("index" in i for i in items) else items
            vectors = [[float(x) for x in item["embedding"]] for item in ordered]
        except (ValueError, KeyError, TypeError, RecursionError) as exc:  # RecursionError: nested too deep
            raise InvalidEmbeddingResponse(f"not an embeddings response: {exc!r}") from exc
        if len(vectors) != expected:
            raise InvalidEmbeddingResponse(f"{len(vectors)} vectors for {expected} inputs")
        expected = self._dimension or (len(vectors[0]) if vectors else 0)
        for vector in vectors:
            if len(vector) != expected:
                raise InvalidEmbeddingResponse(f"a vector of length {len(vector)}, expected {expected}")
        return [normalized(vector) for vector in vectors]


def create() -> OpenAICompatibleEmbedder:
    """Plugin factory: the embedder configured by `CORTEX_EMBEDDER_OPENAI_*` (at least BASE_URL and MODEL)."""
    return OpenAICompatibleEmbedder(settings_from_environment())
