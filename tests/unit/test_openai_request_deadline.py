"""`CORTEX_EMBEDDER_OPENAI_TIMEOUT_SECONDS` bounds a whole request: its answer read to the end, and its retries
and their waits (QA 34, B1 and B2)."""

import time

import pytest

from cortex_embedding.errors import EmbedderUnavailable
from tests.scripted_endpoint import ScriptedEndpoint, Status, Vectors
from tests.unit.conftest import MakeEmbedder


def test_an_answer_trickled_past_the_deadline_is_cut_off_there(
    scripted: ScriptedEndpoint, make_embedder: MakeEmbedder
) -> None:
    """Before: httpx's timeout bounded each read, so an answer trickling a byte every 0.15 s was waited for whole
    (QA 34: a search held 13 s against its 2 s query-embedding timeout, and the gateway answered 504)."""
    scripted.script.append(Vectors(trickle_seconds=3.0))
    query_embedder = make_embedder(timeout_seconds=1.0, max_retries=0)  # as the aggregator configures it

    started = time.monotonic()
    with pytest.raises(EmbedderUnavailable, match="Timeout"):
        query_embedder.embed(["hello"])
    assert time.monotonic() - started < 1.5


async def test_the_health_probe_is_cut_off_at_its_deadline_too(
    scripted: ScriptedEndpoint, make_embedder: MakeEmbedder
) -> None:
    scripted.script.append(Vectors(trickle_seconds=3.0))
    started = time.monotonic()
    assert await make_embedder(timeout_seconds=1.0).health() == "no complete answer within 1 s"
    assert time.monotonic() - started < 1.5


def test_a_hung_endpoint_costs_one_deadline_not_one_per_attempt(
    scripted: ScriptedEndpoint, make_embedder: MakeEmbedder
) -> None:
    """Before: each of the 5 attempts had its own timeout (QA 34: ~155 s with the defaults before the first
    document was indexed lexical-only, with everything queued behind it waiting)."""
    scripted.script.extend([Vectors(late_seconds=5.0)] * 5)
    started = time.monotonic()
    with pytest.raises(EmbedderUnavailable, match="failed 1 attempt"):
        make_embedder(timeout_seconds=0.5, max_retries=4).embed(["hello"])
    assert time.monotonic() - started < 1.0
    assert scripted.requests == 1


def test_retries_stop_where_their_wait_would_end_past_the_deadline(
    scripted: ScriptedEndpoint, make_embedder: MakeEmbedder
) -> None:
    scripted.script.extend([Status(503, retry_after="0.4")] * 20)  # tries at 0, 0.4 and 0.8 s; not at 1.2
    started = time.monotonic()
    with pytest.raises(EmbedderUnavailable, match=r"failed 3 attempt.*a retry in 0\.40s would end past the deadline"):
        make_embedder(timeout_seconds=1.0, max_retries=10).embed(["hello"])
    assert time.monotonic() - started < 1.0
    assert scripted.requests == 3


def test_a_retry_after_past_the_deadline_fails_at_once_and_the_fail_fast_window_starts(
    scripted: ScriptedEndpoint, make_embedder: MakeEmbedder
) -> None:
    """Before: a 429 with `Retry-After: 20` was waited out, 4 times, while every document queued behind it waited."""
    scripted.script.extend([Status(429, retry_after="20")] * 5)
    failing = make_embedder(timeout_seconds=2.0, max_retries=4, fail_fast_seconds=60)

    started = time.monotonic()
    with pytest.raises(EmbedderUnavailable, match=r"failed 1 attempt.*429.*a retry in 20\.00s would end past"):
        failing.embed(["hello"])
    assert time.monotonic() - started < 1.0
    with pytest.raises(EmbedderUnavailable, match="tried again in"):
        failing.embed(["hello"])
    assert scripted.requests == 1


def test_retries_that_fit_in_the_deadline_are_made(scripted: ScriptedEndpoint, make_embedder: MakeEmbedder) -> None:
    scripted.script.extend([Status(503), Status(429, retry_after="0.2"), Vectors()])
    assert len(make_embedder(timeout_seconds=2.0).embed(["hello"])) == 1
    assert scripted.requests == 3
