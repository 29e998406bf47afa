"""reranker `http`: a cross-encoder behind a rerank endpoint, in the shape Cohere, Jina, vLLM, Infinity and
LocalAI share: `POST {base_url}/rerank` with `{model, query, documents, top_n}`, answered by
`{"results": [{"index", "relevance_score"}, …]}`.

A search waits for one try within `timeout_seconds` (no retries: a late rerank is worse than the fused
order); any failure raises `RerankFailed` and the caller keeps the order it had. Configured from the
environment, prefix `CORTEX_RERANKER_`; `create()` is the plugin factory.
"""

import math
from collections.abc import Sequence
from typing import Any

import httpx
from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from cortex_contracts.plugins import PluginNotConfigured
from cortex_contracts.settings_values import HttpUrl
from cortex_plugins.rerankers import RerankFailed

MAX_DETAIL_CHARS = 300


class HttpRerankerSettings(BaseSettings):
    model_config = SettingsConfigDict(
        allow_inf_nan=False, env_prefix="CORTEX_RERANKER_", env_file=".env", extra="ignore"
    )

    base_url: HttpUrl | None = Field(default=None, description="The API root, e.g. `http://localhost:7997/v1`.")
    model: str = Field(default="", description="Sent with each request (a server with one model ignores it).")
    api_key: SecretStr | None = Field(default=None, description="Sent as `Authorization: Bearer …` when set.")
    timeout_seconds: float = Field(default=1.0, gt=0, description="A search waits this long, once.")


class HttpReranker:
    name = "http"

    def __init__(self, settings: HttpRerankerSettings) -> None:
        if not settings.base_url:
            raise PluginNotConfigured("CORTEX_RERANKER_BASE_URL is not set")
        self.settings = settings
        self.endpoint = f"{settings.base_url.rstrip('/')}/rerank"
        self._client: httpx.AsyncClient | None = None  # made on first use: listing plugins opens nothing

    def _connected(self) -> httpx.AsyncClient:
        if self._client is None:
            key = self.settings.api_key
            headers = {"Authorization": f"Bearer {key.get_secret_value()}"} if key else {}
            self._client = httpx.AsyncClient(headers=headers, timeout=self.settings.timeout_seconds)
        return self._client

    async def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        """One relevance score per passage, in their order; higher is more relevant."""
        if not passages:
            return []
        body = {"model": self.settings.model, "query": query, "documents": list(passages), "top_n": len(passages)}
        try:
            response = await self._connected().post(self.endpoint, json=body)
        except httpx.HTTPError as exc:
            raise RerankFailed(f"rerank endpoint unreachable: {type(exc).__name__}: {exc}") from exc
        if response.status_code != 200:
            raise RerankFailed(f"rerank endpoint answered {response.status_code}: {response.text[:MAX_DETAIL_CHARS]}")
        try:
            return scores_of(response.json(), len(passages))
        except (ValueError, TypeError) as exc:  # ValueError includes a body that is not JSON
            raise RerankFailed(f"rerank endpoint's answer is not usable: {exc}") from exc

    async def health(self) -> str | None:
        """Whether the endpoint reranks: one passage, as a search would send it (there is no common health
        route across these servers). None when it does, else why not."""
        try:
            await self.rerank("health check", ["health check"])
        except RerankFailed as exc:
            return f"{self.endpoint}: {exc}"
        return None

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()


def scores_of(answer: Any, count: int) -> list[float]:
    """Each passage's score from a rerank answer; every passage must be scored, once, with a finite number."""
    results = answer.get("results") if isinstance(answer, dict) else None
    if not isinstance(results, list):
        raise TypeError("no `results` list")
    scores: list[float | None] = [None] * count
    for result in results:
        index = result.get("index") if isinstance(result, dict) else None
        score = result.get("relevance_score") if isinstance(result, dict) else None
        if not isinstance(index, int) or not 0 <= index < count or scores[index] is not None:
            raise ValueError(f"bad or repeated index {index!r}")
        if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
            raise ValueError(f"bad score {score!r} for index {index}")
        scores[index] = float(score)
    if any(score is None for score in scores):
        raise ValueError(f"{scores.count(None)} of {count} passages were not scored")
    return [score for score in scores if score is not None]


def create() -> HttpReranker:
    return HttpReranker(HttpRerankerSettings())
