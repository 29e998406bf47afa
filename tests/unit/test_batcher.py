"""BatchingEmbedder: concurrent requests share large, length-sorted model calls; each caller gets its own vectors."""

import asyncio
import threading
import time
from collections.abc import AsyncIterator

import pytest

from cortex_embedding.batcher import BatchingEmbedder
from cortex_embedding.errors import EmbeddingRejected


class ModelFailed(RuntimeError):
    pass


def vector(text: str) -> list[float]:
    """The fake model's embedding of "n w w…": [n, -number of words], so a vector tells its text apart."""
    words = text.split()
    return [float(words[0]), -float(len(words))]


def vectors(*texts: str) -> list[list[float]]:
    return [vector(text) for text in texts]


class FakeModel:
    """Embeds with `vector`. The first call can be held open, so later requests queue up meanwhile."""

    name = "fake"
    dimension = 2

    def __init__(self, *, hold_first_call: bool = True, fail_on_call: int | None = None) -> None:
        self.calls: list[list[str]] = []
        self.call_times: list[float] = []
        self.busy = threading.Event()
        self.release = threading.Event()
        self._hold_first_call = hold_first_call
        self._fail_on_call = fail_on_call

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        self.call_times.append(time.monotonic())
        if len(self.calls) == 1 and self._hold_first_call:
            self.busy.set()
            if not self.release.wait(timeout=10):
                raise TimeoutError("the test never released the model")
        if len(self.calls) == self._fail_on_call:
            raise ModelFailed("model crashed")
        return vectors(*texts)


@pytest.fixture
def model() -> FakeModel:
    return FakeModel()


@pytest.fixture
async def batcher(model: FakeModel) -> AsyncIterator[BatchingEmbedder]:
    embedder = BatchingEmbedder(model)
    yield embedder
    model.release.set()
    await embedder.close()


async def queue_behind_busy_model(
    batcher: BatchingEmbedder, model: FakeModel, requests: list[list[str]]
) -> list[asyncio.Task[list[list[float]]]]:
    """Start the first request, wait until the model is busy with it, then queue the rest."""
    first = asyncio.create_task(batcher.embed(requests[0]))
    await asyncio.wait_for(asyncio.to_thread(model.busy.wait, 5), timeout=6)
    rest = [asyncio.create_task(batcher.embed(texts)) for texts in requests[1:]]
    await asyncio.sleep(0)  # let the new tasks put their requests on the queue
    return [first, *rest]


async def test_requests_waiting_on_a_busy_model_share_the_next_call(
    batcher: BatchingEmbedder, model: FakeModel
) -> None:
    requests = [["1"], ["2", "3"], ["4"], ["5", "6", "7"], ["8"]]

    tasks = await queue_behind_busy_model(batcher, model, requests)
    model.release.set()
    results = await asyncio.wait_for(asyncio.gather(*tasks), timeout=5)

    assert model.calls == [["1"], ["2", "3", "4", "5", "6", "7", "8"]]
    assert results == [vectors(*texts) for texts in requests]


async def test_a_batch_stops_growing_at_max_batch() -> None:
    model = FakeModel()
    batcher = BatchingEmbedder(model, max_batch=3)
    try:
        requests = [["1"], ["2"], ["3"], ["4"], ["5"], ["6"]]
        tasks = await queue_behind_busy_model(batcher, model, requests)
        model.release.set()
        results = await asyncio.wait_for(asyncio.gather(*tasks), timeout=5)
    finally:
        model.release.set()
        await batcher.close()

    assert model.calls == [["1"], ["2", "3", "4"], ["5", "6"]]
    assert results == [vectors(*texts) for texts in requests]


async def test_requests_arriving_while_the_model_is_idle_are_coalesced_up_to_max_batch() -> None:
    """Handlers ask one after another, not all at once: the batcher lingers for them instead of calling at once."""
    model = FakeModel(hold_first_call=False)
    batcher = BatchingEmbedder(model, max_batch=4, linger_seconds=30)
    try:
        tasks = []
        for n in range(1, 7):
            tasks.append(asyncio.create_task(batcher.embed([str(n)])))
            await asyncio.sleep(0.01)
        results = await asyncio.wait_for(asyncio.gather(*tasks[:4]), timeout=5)  # full batch: no 30 s linger

        assert model.calls == [["1", "2", "3", "4"]]
        assert results == [vectors(str(n)) for n in range(1, 5)]
        assert not any(task.done() for task in tasks[4:]), "the next call is still lingering for more"
    finally:
        await batcher.close()


async def test_lingering_is_bounded_by_linger_seconds() -> None:
    model = FakeModel(hold_first_call=False)
    batcher = BatchingEmbedder(model, linger_seconds=0.2)
    try:
        started = time.monotonic()
        first = asyncio.create_task(batcher.embed(["1"]))
        await asyncio.sleep(0.05)
        second = asyncio.create_task(batcher.embed(["2"]))  # within the linger: the same call
        assert await asyncio.wait_for(first, timeout=5) == vectors("1")
        answered = time.monotonic()
        assert await second == vectors("2")
        assert await asyncio.wait_for(batcher.embed(["3"]), timeout=5) == vectors("3")  # after it: a call of its own
    finally:
        await batcher.close()

    assert model.calls == [["1", "2"], ["3"]]
    assert model.call_times[0] - started >= 0.2  # the model waited for the linger to run out …
    assert answered - started < 2.0  # … and not much longer (generous: the test machine may be busy)


async def test_by_default_a_request_reaching_an_idle_model_is_embedded_at_once() -> None:
    """No linger unless asked for: the aggregator embeds one search query at a time and must not wait."""
    model = FakeModel(hold_first_call=False)
    batcher = BatchingEmbedder(model)
    try:
        first = asyncio.create_task(batcher.embed(["1"]))
        await asyncio.sleep(0.1)
        first_answered_meanwhile = first.done()
        second = asyncio.create_task(batcher.embed(["2"]))  # would share the call with any linger ≥ 0.1 s
        assert [await first, await second] == [vectors("1"), vectors("2")]
    finally:
        await batcher.close()
    assert model.calls == [["1"], ["2"]]
    assert first_answered_meanwhile


async def test_texts_reach_the_model_longest_first_and_vectors_return_in_each_callers_order(
    batcher: BatchingEmbedder, model: FakeModel
) -> None:
    requests = [["0"], ["1 a a", "2"], ["3 a", "4 a a a a", "5 a"], ["6 a a a"]]

    tasks = await queue_behind_busy_model(batcher, model, requests)
    model.release.set()
    results = await asyncio.wait_for(asyncio.gather(*tasks), timeout=5)

    assert model.calls[1] == ["4 a a a a", "6 a a a", "1 a a", "3 a", "5 a", "2"]
    assert results == [vectors(*texts) for texts in requests]


async def test_stats_count_calls_and_estimate_padding_of_sorted_slices() -> None:
    model = FakeModel()
    batcher = BatchingEmbedder(model)
    try:
        tasks = await queue_behind_busy_model(batcher, model, [["0"], ["1 a a a"], ["2 a", "3 a a"], ["4"]])
        model.release.set()
        await asyncio.wait_for(asyncio.gather(*tasks), timeout=5)
    finally:
        model.release.set()
        await batcher.close()

    stats = batcher.stats
    assert (stats.calls, stats.requests, stats.texts) == (2, 4, 5)
    # second call, sorted 4, 3, 2, 1 words: texts this short go in one slice (a run costs more than
    # their padding), padded 4·4 = 16 for 10 real; first call 1 for 1
    assert (stats.tokens, stats.padded_tokens) == (11, 17)
    assert "calls=2" in stats.summary()


async def test_a_model_failure_reaches_every_waiter_and_the_next_call_still_works() -> None:
    model = FakeModel(fail_on_call=2)
    batcher = BatchingEmbedder(model)
    try:
        tasks = await queue_behind_busy_model(batcher, model, [["1"], ["2"], ["3", "4"], ["5"]])
        model.release.set()
        outcomes = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), timeout=5)

        assert outcomes[0] == vectors("1")
        assert len(outcomes[1:]) == 3
        assert all(isinstance(outcome, ModelFailed) for outcome in outcomes[1:])
        assert await asyncio.wait_for(batcher.embed(["9"]), timeout=5) == vectors("9")
    finally:
        model.release.set()
        await batcher.close()
    assert model.calls == [["1"], ["2", "3", "4", "5"], ["9"]]


async def test_no_texts_need_no_model_call(batcher: BatchingEmbedder, model: FakeModel) -> None:
    assert await batcher.embed([]) == []
    assert model.calls == []


async def test_with_two_streams_a_second_call_runs_while_the_first_is_busy() -> None:
    model = FakeModel()
    batcher = BatchingEmbedder(model, streams=2)
    try:
        requests = [["1"], ["2", "3"], ["4"]]
        tasks = await queue_behind_busy_model(batcher, model, requests)
        # The first call is still held open: only a second stream can have embedded the others.
        done, _ = await asyncio.wait(tasks[1:], timeout=5)
        assert len(done) == 2
        assert not tasks[0].done()
        model.release.set()
        results = await asyncio.wait_for(asyncio.gather(*tasks), timeout=5)
    finally:
        model.release.set()
        await batcher.close()

    assert model.calls == [["1"], ["2", "3"], ["4"]]  # each call takes its stream's share: see below
    assert results == [vectors(*texts) for texts in requests]


async def test_with_two_streams_a_call_takes_half_of_what_is_queued() -> None:
    """At the end of a burst one stream must not work through the last texts while the other stands idle."""
    model = FakeModel()
    batcher = BatchingEmbedder(model, streams=2)
    try:
        requests = [["1"], ["2"], ["3"], ["4"], ["5"], ["6"]]
        tasks = await queue_behind_busy_model(batcher, model, requests)
        done, _ = await asyncio.wait(tasks[1:], timeout=5)
        model.release.set()
        results = await asyncio.wait_for(asyncio.gather(*tasks), timeout=5)
    finally:
        model.release.set()
        await batcher.close()

    assert len(done) == 5
    # 5 queued: the free stream takes 3 (⌈5/2⌉), then 1 of the 2 left, then the last.
    assert model.calls == [["1"], ["2", "3", "4"], ["5"], ["6"]]
    assert results == [vectors(*texts) for texts in requests]


async def test_a_long_request_takes_turns_so_a_short_one_behind_it_waits_one_call() -> None:
    """A long document embedded in one call held the model for minutes while every other document waited."""
    model = FakeModel()
    batcher = BatchingEmbedder(model, max_batch=3)
    try:
        long = [str(n) for n in range(10, 18)]  # 8 texts: more than a call
        tasks = await queue_behind_busy_model(batcher, model, [["1"], long, ["2"]])
        model.release.set()
        results = await asyncio.wait_for(asyncio.gather(*tasks), timeout=5)
    finally:
        model.release.set()
        await batcher.close()

    # A turn of the long request, then the short one queued behind it (with the next turn filling the call).
    assert model.calls == [["1"], ["10", "11", "12"], ["2", "13", "14"], ["15", "16", "17"]]
    assert results == [vectors("1"), vectors(*long), vectors("2")]


class SteppedModel(FakeModel):
    """Each call waits for a step: the test decides when the model moves on."""

    def __init__(self) -> None:
        super().__init__(hold_first_call=False)
        self.steps = threading.Semaphore(0)
        self.arrived = 0  # calls that reached the model, done or waiting for their step

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.arrived += 1
        if not self.steps.acquire(timeout=10):
            raise TimeoutError("the test never let the model go on")
        return super().embed(texts)


async def test_a_short_request_arriving_between_turns_goes_before_the_rest_of_a_long_one() -> None:
    model = SteppedModel()
    batcher = BatchingEmbedder(model, max_batch=2)
    try:
        long = [str(n) for n in range(10, 20)]
        tasks = [asyncio.create_task(batcher.embed(texts)) for texts in (["1"], long)]
        await asyncio.sleep(0.05)
        model.steps.release()  # call 1: ["1", "10"]; the long request's rest went back in the queue
        while model.arrived < 2:  # call 2 (its next turn) waits in the model; its rest went back again
            await asyncio.sleep(0.01)
        late = asyncio.create_task(batcher.embed(["2"]))  # queued behind that rest
        await asyncio.sleep(0.05)
        model.steps.release(100)
        results = await asyncio.wait_for(asyncio.gather(*tasks, late), timeout=5)
    finally:
        model.steps.release(100)
        await batcher.close()

    # The short request waits for the turn already queued ahead of it, not for the whole long request.
    assert model.calls == [["1", "10"], ["11", "12"], ["13", "14"], ["2", "15"], ["16", "17"], ["18", "19"]]
    assert results == [vectors("1"), vectors(*long), vectors("2")]


async def test_the_turns_of_a_long_request_whose_caller_gave_up_are_not_embedded() -> None:
    model = FakeModel()
    batcher = BatchingEmbedder(model, max_batch=2)
    try:
        long = [str(n) for n in range(10, 20)]
        tasks = await queue_behind_busy_model(batcher, model, [["1"], long, ["2"]])
        tasks[1].cancel()
        model.release.set()
        assert await asyncio.wait_for(tasks[2], timeout=5) == vectors("2")
        await asyncio.wait_for(tasks[0], timeout=5)
    finally:
        model.release.set()
        await batcher.close()

    embedded = [text for call in model.calls for text in call]
    assert set(embedded) == {"1", "2"}, model.calls


async def test_with_two_streams_the_turns_of_a_long_request_run_at_once_and_come_back_in_order() -> None:
    model = FakeModel(hold_first_call=False)
    batcher = BatchingEmbedder(model, max_batch=4, streams=2)
    try:
        long = [" ".join(str(n) for _ in range(n % 5 + 1)) for n in range(10, 40)]  # lengths vary: sorted per call
        assert await asyncio.wait_for(batcher.embed(long), timeout=5) == vectors(*long)
    finally:
        await batcher.close()

    assert all(len(call) <= 4 for call in model.calls)
    assert sorted(text for call in model.calls for text in call) == sorted(long)


class RefusingModel(FakeModel):
    """Refuses any call holding a text with `x` in it, as an endpoint refuses one too long for its context."""

    def embed(self, texts: list[str]) -> list[list[float]]:
        if any("x" in text for text in texts):
            self.calls.append(list(texts))
            raise EmbeddingRejected(400, "input too long for context")
        return super().embed(texts)


async def test_a_refused_call_is_made_again_per_request_so_only_the_refused_one_fails() -> None:
    """QA 47: one text the endpoint refused made every request of its call lexical-only until the backfill."""
    model = RefusingModel()
    batcher = BatchingEmbedder(model)
    try:
        tasks = await queue_behind_busy_model(batcher, model, [["1"], ["2"], ["3 x"], ["4", "5"]])
        model.release.set()
        outcomes = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), timeout=5)
    finally:
        model.release.set()
        await batcher.close()
    assert outcomes[:2] == [vectors("1"), vectors("2")]
    assert isinstance(outcomes[2], EmbeddingRejected)
    assert outcomes[3] == vectors("4", "5")
    assert model.calls == [["1"], ["3 x", "2", "4", "5"], ["2"], ["3 x"], ["4", "5"]]  # longest first
