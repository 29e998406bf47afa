"""Any OpenAI-compatible `/v1/embeddings` endpoint: OpenAI, Ollama, vLLM, Text Embeddings Inference.

Inputs go in batches of `max_batch`; each request has a timeout and is retried with exponential
backoff and jitter on connection errors, timeouts, 408, 429 (honouring `Retry-After`) and 5xx. Other
4xx answers are not retried. Once a request has failed all its attempts, calls are refused at once for
`fail_fast_seconds` (see `cortex_contracts.outage`): a hung endpoint costs one request's retries, not
every document's. Vectors come back normalized to unit length (cosine = dot product).

Configured from the environment, prefix `CORTEX_EMBEDDER_OPENAI_` (see `OpenAIEmbedderSettings`);
`create()` is the plugin factory.
"""

import logging
import math
import random
import threading
import time
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx
from pydantic import Field, SecretStr, ValidationError
from pydantic_core import ErrorDetails
from pydantic_settings import BaseSettings, SettingsConfigDict

from cortex_contracts.outage import Outage
from cortex_embedding.errors import (
    EmbedderNotConfigured,
    EmbedderSettingsInvalid,
    EmbedderUnavailable,
    EmbeddingRejected,
    InvalidEmbeddingResponse,
)

log = logging.getLogger(__name__)

RETRIED_STATUSES = frozenset({408, 429})
DIMENSION_PROBE = "dimension probe"
HEALTH_PROBE = "health check"
HEALTH_TIMEOUT_SECONDS = 5.0
MAX_DETAIL_CHARS = 300


class OpenAIEmbedderSettings(BaseSettings):
    model_config = SettingsConfigDict(
        allow_inf_nan=False, env_prefix="CORTEX_EMBEDDER_OPENAI_", env_file=".env", extra="ignore"
    )

    base_url: str = Field(description="The API root, e.g. `http://localhost:11434/v1` (`/embeddings` is appended).")
    model: str = Field(description="The model name sent with each request and recorded with the index.")
    api_key: SecretStr | None = Field(default=None, description="Sent as `Authorization: Bearer …` when set.")
    dimension: int | None = Field(
        default=None, ge=1, description="Vector length; when unset, discovered by the first call."
    )
    send_dimensions: bool = Field(
        default=False,
        description="Also send `dimensions` (OpenAI text-embedding-3 shortening); needs `dimension`.",
    )
    timeout_seconds: float = Field(default=30.0, gt=0, description="Per request.")
    max_retries: int = Field(default=4, ge=0, description="Retries after the first attempt of each request.")
    backoff_initial_seconds: float = Field(default=0.5, ge=0)
    backoff_max_seconds: float = Field(default=30.0, ge=0, description="Also caps a server's `Retry-After`.")
    max_batch: int = Field(default=64, ge=1, description="Inputs per request.")
    fail_fast_seconds: float = Field(
        default=10.0,
        ge=0,
        description="After a request failed all its attempts, calls fail at once for this long (documents are"
        " indexed lexical-only, searches answer lexically); 0: every call tries the endpoint.",
    )


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


def _detail(response: httpx.Response) -> str:
    return " ".join(response.text.split())[:MAX_DETAIL_CHARS]


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
        self._client: httpx.Client | None = None
        self._client_lock = threading.Lock()
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
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.settings.max_batch):
            vectors.extend(self._embed_batch(texts[start : start + self.settings.max_batch]))
        return vectors

    def close(self) -> None:
        with self._client_lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    async def health(self) -> str | None:
        """One small request, no retries: None when the endpoint embeds, else what went wrong."""
        timeout = min(self.settings.timeout_seconds, HEALTH_TIMEOUT_SECONDS)
        try:
            async with httpx.AsyncClient(timeout=timeout) as client:
                response = await client.post(self.url, json=self._payload([HEALTH_PROBE]), headers=self._headers)
        except httpx.HTTPError as exc:
            return f"unreachable: {type(exc).__name__}: {exc}"
        if response.status_code != 200:
            return f"HTTP {response.status_code}: {_detail(response)}"
        try:
            self._vectors(response, 1)
        except InvalidEmbeddingResponse as exc:
            return str(exc)
        self.outage.ended()
        return None

    def _http(self) -> httpx.Client:
        with self._client_lock:
            if self._client is None:
                self._client = httpx.Client(timeout=self.settings.timeout_seconds, headers=self._headers)
            return self._client

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

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        settings = self.settings
        attempts = settings.max_retries + 1
        for attempt in range(attempts):
            if (refusal := self.outage.refusal()) is not None:  # also between retries: another call saw it fail
                raise EmbedderUnavailable(refusal)
            retry_after: float | None = None
            try:
                response = self._http().post(self.url, json=self._payload(texts))
            except httpx.TransportError as exc:  # connect errors, timeouts, broken connections
                failure = f"{type(exc).__name__}: {exc}"
            else:
                if response.status_code == 200:
                    vectors = self._vectors(response, len(texts))
                    self.outage.ended()
                    return vectors
                if response.status_code not in RETRIED_STATUSES and response.status_code < 500:
                    raise EmbeddingRejected(response.status_code, _detail(response))
                failure = f"HTTP {response.status_code}: {_detail(response)}"
                retry_after = retry_after_seconds(response.headers.get("Retry-After"))
            if attempt + 1 == attempts:
                reason = f"{self.url} failed {attempts} attempt(s); last: {failure}"
                self.outage.began(reason)
                raise EmbedderUnavailable(reason)
            delay = self._backoff(attempt) if retry_after is None else min(retry_after, settings.backoff_max_seconds)
            log.warning(
                "embedding request failed (%s); retry %d/%d in %.2fs", failure, attempt + 1, attempts - 1, delay
            )
            time.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover — the loop returns or raises

    def _vectors(self, response: httpx.Response, expected: int) -> list[list[float]]:
        try:
            items = response.json()["data"]
            ordered = sorted(items, key=lambda item: int(item["index"])) if all("index" in i for i in items) else items
            vectors = [[float(x) for x in item["embedding"]] for item in ordered]
        except (ValueError, KeyError, TypeError) as exc:
            raise InvalidEmbeddingResponse(f"not an embeddings response: {exc!r}") from exc
        if len(vectors) != expected:
            raise InvalidEmbeddingResponse(f"{len(vectors)} vectors for {expected} inputs")
        expected = self._dimension or (len(vectors[0]) if vectors else 0)
        for vector in vectors:
            if len(vector) != expected:
                raise InvalidEmbeddingResponse(f"a vector of length {len(vector)}, expected {expected}")
        return [normalized(vector) for vector in vectors]


def _variable(error: ErrorDetails) -> str:
    return f"CORTEX_EMBEDDER_OPENAI_{str(error['loc'][0]).upper()}"


def settings_from_environment() -> OpenAIEmbedderSettings:
    """`CORTEX_EMBEDDER_OPENAI_*`, or an error that names the variables missing or not valid."""
    try:
        return OpenAIEmbedderSettings()  # filled from the environment
    except ValidationError as exc:
        missing = sorted({_variable(e) for e in exc.errors() if e["type"] == "missing"})
        invalid = sorted({f"{_variable(e)} ({e['msg']})" for e in exc.errors() if e["type"] != "missing"})
        if invalid:
            raise EmbedderSettingsInvalid(f"the OpenAI-compatible embedder: not valid: {', '.join(invalid)}") from exc
        raise EmbedderNotConfigured(f"the OpenAI-compatible embedder needs {', '.join(missing)}") from exc


def create() -> OpenAICompatibleEmbedder:
    """Plugin factory: the embedder configured by `CORTEX_EMBEDDER_OPENAI_*` (at least BASE_URL and MODEL)."""
    return OpenAICompatibleEmbedder(settings_from_environment())
