"""BatchingEmbedder: concurrent requests share model calls and each caller gets its own vectors back."""

import asyncio
import threading
from collections.abc import AsyncIterator

import pytest

from cortex_embedding.batcher import BatchingEmbedder


class ModelFailed(RuntimeError):
    pass


class FakeModel:
    """Embeds "n" as [n, -n]. The first call can be held open, so later requests queue up meanwhile."""

    name = "fake"
    dimension = 2

    def __init__(self, *, fail_on_call: int | None = None) -> None:
        self.calls: list[list[str]] = []
        self.busy = threading.Event()
        self.release = threading.Event()
        self._fail_on_call = fail_on_call

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        if len(self.calls) == 1:
            self.busy.set()
            if not self.release.wait(timeout=10):
                raise TimeoutError("the test never released the model")
        if len(self.calls) == self._fail_on_call:
            raise ModelFailed("model crashed")
        return [[float(text), -float(text)] for text in texts]


def vectors(*texts: str) -> list[list[float]]:
    return [[float(text), -float(text)] for text in texts]


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
