"""The OpenAI-compatible embedder against a real local HTTP server that fails, stalls and rate-limits."""

import math
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from cortex_contracts.plugins import PluginNotConfigured
from cortex_embedded_servers import free_port
from cortex_embedding import openai_compatible
from cortex_embedding.embedder import model_name
from cortex_embedding.errors import (
    EmbedderNotConfigured,
    EmbedderSettingsInvalid,
    EmbedderUnavailable,
    EmbeddingRejected,
    InvalidEmbeddingResponse,
)
from cortex_embedding.openai_compatible import (
    OpenAICompatibleEmbedder,
    OpenAIEmbedderSettings,
    retry_after_seconds,
)
from tests.embedding_server import Answer, FakeEmbeddingServer, Slow, Status, bag_of_words

MODEL = "fake-embed"


@pytest.fixture
def server() -> Iterator[FakeEmbeddingServer]:
    running = FakeEmbeddingServer(dimension=16).start()
    yield running
    running.stop()


def embedder(base_url: str, **overrides: object) -> OpenAICompatibleEmbedder:
    settings: dict[str, object] = {
        "base_url": base_url,
        "model": MODEL,
        "timeout_seconds": 2.0,
        "max_retries": 3,
        "backoff_initial_seconds": 0.01,
        "backoff_max_seconds": 5.0,
        **overrides,
    }
    return OpenAICompatibleEmbedder(OpenAIEmbedderSettings.model_validate(settings))


def unit(vector: list[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector]


def test_batches_inputs_keeps_their_order_and_normalizes(server: FakeEmbeddingServer) -> None:
    texts = ["alpha beta", "gamma", "delta delta epsilon", "zeta", "eta theta"]
    vectors = embedder(server.base_url, max_batch=2).embed(texts)

    assert [len(r["input"]) for r in server.requests] == [2, 2, 1]
    assert all(r["model"] == MODEL for r in server.requests)
    for text, vector in zip(texts, vectors, strict=True):
        assert vector == pytest.approx(unit(bag_of_words(text, 16, MODEL)))
    assert all(math.isclose(sum(x * x for x in v), 1.0) for v in vectors)


def test_server_errors_are_retried_until_an_answer(server: FakeEmbeddingServer) -> None:
    server.script.extend([Status(500), Status(503)])
    assert len(embedder(server.base_url).embed(["hello"])) == 1
    assert server.embeddings_requests() == 3


def test_gives_up_after_its_retries_with_a_typed_error(server: FakeEmbeddingServer) -> None:
    server.script.extend([Status(502)] * 10)
    with pytest.raises(EmbedderUnavailable, match="3 attempt"):
        embedder(server.base_url, max_retries=2).embed(["hello"])
    assert server.embeddings_requests() == 3


def test_rate_limit_waits_as_long_as_retry_after_says(server: FakeEmbeddingServer) -> None:
    server.script.append(Status(429, retry_after="1"))
    started = time.monotonic()
    embedder(server.base_url).embed(["hello"])
    assert time.monotonic() - started >= 1.0  # backoff alone would have waited ~0.01 s
    assert server.embeddings_requests() == 2


def test_retry_after_is_read_as_seconds_or_http_date() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert retry_after_seconds("7") == 7
    assert retry_after_seconds(format_datetime(now + timedelta(seconds=30), usegmt=True), now) == 30
    assert retry_after_seconds("soon") is None
    assert retry_after_seconds(None) is None


def test_a_bad_request_is_not_retried(server: FakeEmbeddingServer) -> None:
    server.script.extend([Status(400), Status(400)])
    with pytest.raises(EmbeddingRejected) as raised:
        embedder(server.base_url).embed(["hello"])
    assert raised.value.status_code == 400
    assert "scripted 400" in raised.value.detail
    assert server.embeddings_requests() == 1


def test_a_slow_answer_fails_at_the_requests_deadline_without_a_retry(server: FakeEmbeddingServer) -> None:
    server.script.append(Slow(3.0))
    started = time.monotonic()
    with pytest.raises(EmbedderUnavailable, match="deadline"):
        embedder(server.base_url, timeout_seconds=0.3, max_retries=2).embed(["hello"])
    assert time.monotonic() - started < 2.5  # did not wait for the slow answer
    assert server.embeddings_requests() == 1  # the deadline covers retries too: none was left time


async def test_once_a_request_has_failed_its_attempts_calls_fail_at_once_until_the_endpoint_answers(
    server: FakeEmbeddingServer,
) -> None:
    server.script.extend([Status(503)] * 2)
    failing = embedder(server.base_url, max_retries=1, fail_fast_seconds=60)
    with pytest.raises(EmbedderUnavailable, match="2 attempt"):
        failing.embed(["hello"])

    with pytest.raises(EmbedderUnavailable, match="tried again in"):
        failing.embed(["hello"])
    assert server.embeddings_requests() == 2  # before: every call made its own attempts

    assert await failing.health() is None  # the probe is never refused; it passes, and ends the outage
    assert len(failing.embed(["hello"])) == 1


def test_with_no_fail_fast_time_every_call_tries_the_endpoint(server: FakeEmbeddingServer) -> None:
    server.script.extend([Status(503)] * 2)
    failing = embedder(server.base_url, max_retries=0, fail_fast_seconds=0)
    for _ in range(2):
        with pytest.raises(EmbedderUnavailable, match="1 attempt"):
            failing.embed(["hello"])
    assert server.embeddings_requests() == 2
    assert len(failing.embed(["hello"])) == 1


def test_nothing_listening_is_unavailable() -> None:
    with pytest.raises(EmbedderUnavailable, match="ConnectError"):
        embedder(f"http://127.0.0.1:{free_port('127.0.0.1')}/v1", max_retries=1).embed(["hello"])


def test_dimension_is_discovered_by_a_call_and_enforced_once_configured_or_expected(
    server: FakeEmbeddingServer,
) -> None:
    discovering = embedder(server.base_url)
    assert discovering.known_dimension is None
    assert discovering.dimension == 16
    assert server.embeddings_requests() == 1

    with pytest.raises(InvalidEmbeddingResponse, match="length 16, expected 8"):
        embedder(server.base_url, dimension=8).embed(["hello"])
    discovering.expect_dimension(8)  # the index's, once its indexer has adopted it
    with pytest.raises(InvalidEmbeddingResponse, match="length 16, expected 8"):
        discovering.embed(["hello"])


def test_one_answer_of_another_length_does_not_set_the_dimension(server: FakeEmbeddingServer) -> None:
    """Before (QA 29): the first answer's length was kept, and every right answer after a wrong one refused."""
    discovering = embedder(server.base_url)
    server.script.append(Answer([1.0] * 8))

    assert discovering.dimension == 8
    assert [len(vector) for vector in discovering.embed(["hello", "world"])] == [16, 16]
    assert discovering.known_dimension is None


@pytest.mark.parametrize(
    ("vector", "why"),
    [
        ([math.nan] + [1.0] * 15, "NaN or infinite"),
        ([math.inf] + [1.0] * 15, "NaN or infinite"),
        ([1e200] * 16, "NaN or infinite"),  # its squares overflow: no length to divide by
        ([0.0] * 16, "a vector of zeros"),
    ],
)
def test_a_vector_without_a_direction_is_refused(server: FakeEmbeddingServer, vector: list[float], why: str) -> None:
    """Before (QA 29): NaN was normalized into a vector of NaN, which PostgreSQL refuses: documents failed every
    delivery and searches answered 502; zeros were stored as embedded."""
    server.script.append(Answer(vector))

    with pytest.raises(InvalidEmbeddingResponse, match=why):
        embedder(server.base_url, dimension=16).embed(["hello"])


def test_api_key_and_dimensions_are_sent(server: FakeEmbeddingServer) -> None:
    embedder(server.base_url, api_key="sk-test", dimension=16, send_dimensions=True).embed(["hello"])
    assert server.headers[0]["Authorization"] == "Bearer sk-test"
    assert server.requests[0]["dimensions"] == 16


async def test_health_says_why_not(server: FakeEmbeddingServer) -> None:
    assert await embedder(server.base_url).health() is None
    server.script.append(Status(503))
    assert (await embedder(server.base_url).health() or "").startswith("HTTP 503")
    refused = await embedder(f"http://127.0.0.1:{free_port('127.0.0.1')}/v1").health()
    assert refused is not None
    assert refused.startswith("unreachable")


def test_create_reads_the_environment(server: FakeEmbeddingServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CORTEX_EMBEDDER_OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("CORTEX_EMBEDDER_OPENAI_MODEL", "env-model")
    monkeypatch.setenv("CORTEX_EMBEDDER_OPENAI_DIMENSION", "16")
    created = openai_compatible.create()
    assert (created.name, created.model, created.dimension) == ("openai", "env-model", 16)
    assert model_name(created) == "env-model"
    assert server.embeddings_requests() == 0  # a configured dimension needs no call


def test_create_says_which_settings_are_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CORTEX_EMBEDDER_OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("CORTEX_EMBEDDER_OPENAI_MODEL", "env-model")
    with pytest.raises(EmbedderNotConfigured, match=r"needs CORTEX_EMBEDDER_OPENAI_BASE_URL$"):
        openai_compatible.create()


def test_create_refuses_a_setting_that_is_not_valid_as_a_fault_not_as_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CORTEX_EMBEDDER_OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("CORTEX_EMBEDDER_OPENAI_MODEL", "env-model")
    monkeypatch.setenv("CORTEX_EMBEDDER_OPENAI_TIMEOUT_SECONDS", "soon")
    with pytest.raises(EmbedderSettingsInvalid, match="CORTEX_EMBEDDER_OPENAI_TIMEOUT_SECONDS") as refused:
        openai_compatible.create()
    assert not isinstance(refused.value, PluginNotConfigured)
