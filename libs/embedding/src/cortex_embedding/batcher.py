"""Coalesce concurrent embed requests into large, length-sorted model calls, run in a worker thread.

Handlers embed one document at a time. A transformer pads every text of a batch to the longest one;
the local model sorts each call by length and pads slices of up to 16 texts (ONNX Runtime, cut where
lengths jump: slicing.py; 64 on torch), so small calls are doubly expensive: under-filled slices,
padded to their longest text. On bench/ingest's corpus, measured with torch's slices of 64, a call of
~19 texts computed ~2× the real tokens, sorted calls of 256 texts ~1.3×, 744 ~1.1×. Hence:

- Large calls: when the model becomes free, the worker takes every request already queued, up to
  `max_batch` texts. What is queued is bounded by the callers — for the indexer, its concurrency ×
  passages a document — so that concurrency is what makes calls large. Optionally the worker lingers
  (at most `linger_seconds`) while more requests arrive: a request reaching an idle model is otherwise
  embedded alone while those right behind it wait a whole call. Off by default, because the aggregator
  embeds one search query at a time and every millisecond of linger would be search latency.
- Sorted calls: the texts of a call go to the model longest first, so slices hold texts of similar
  length whatever the embedder; the vectors are put back in each caller's order.

- Streams: with `streams` > 1, that many calls run at once, each taking its share (1/`streams`) of
  what is queued when it starts, up to `max_batch`: full calls in a steady stream, and at the end of a
  burst every stream works through its part of the last passages rather than one stream alone.
  For the local model on 2 cores, two single-threaded calls at a time beat one call on two threads
  (bench/ingest): an operator split across threads ends at a barrier, and on a machine that the
  indexer shares with PostgreSQL and its own event loop, one preempted thread stalls the other.

A model failure fails every request of that call (each handler decides what it means); the next call
starts afresh.
"""

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from cortex_embedding.embedder import Embedder
from cortex_embedding.slicing import padded_tokens

log = logging.getLogger(__name__)

DEFAULT_MAX_BATCH = 256
DEFAULT_LINGER_SECONDS = 0.0  # see the module docstring: a search must not wait


def approximate_tokens(text: str) -> int:
    """A cheap stand-in for the tokenizer's count, good enough to sort by (word pieces run ~1.3 per word)."""
    return len(text.split())


@dataclass
class _Request:
    texts: list[str]
    done: asyncio.Future[list[list[float]]] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


@dataclass
class BatchStats:
    """What the batches looked like, for logs and benchmarks (token counts are `length` estimates)."""

    calls: int = 0
    requests: int = 0
    texts: int = 0
    tokens: int = 0
    padded_tokens: int = 0  # tokens the model computes if it slices as the local model does (slicing.py)
    linger_seconds: float = 0.0  # time the model stood idle waiting for more requests

    def summary(self) -> str:
        """One `key=value` line (benchmarks read it back from the indexer's log)."""
        per_call = self.texts / self.calls if self.calls else 0.0
        return (
            f"calls={self.calls} requests={self.requests} texts={self.texts} texts_per_call={per_call:.1f} "
            f"tokens={self.tokens} padded_tokens={self.padded_tokens} padding={self.padding:.2f} "
            f"linger_seconds={self.linger_seconds:.2f}"
        )

    @property
    def padding(self) -> float:
        return self.padded_tokens / self.tokens if self.tokens else 1.0


class BatchingEmbedder:
    """An `Embedder` for async callers: `await embed(texts)`; concurrent calls share model calls.

    A call stops gathering once it holds `max_batch` texts (the last request taken may carry it past;
    a request is never split). `linger_seconds` bounds how long the model waits idle to fill a call.
    `length` orders the texts of a call. `streams` model calls run at once,
    each in its own thread: for a model whose calls each use one core (see the module docstring).
    """

    def __init__(
        self,
        embedder: Embedder,
        max_batch: int = DEFAULT_MAX_BATCH,
        linger_seconds: float = DEFAULT_LINGER_SECONDS,
        *,
        streams: int = 1,
        length: Callable[[str], int] = approximate_tokens,
    ) -> None:
        self.embedder = embedder
        self.stats = BatchStats()
        self._max_batch = max_batch
        self._linger = linger_seconds
        self._length = length
        self._streams = streams
        self._queue: asyncio.Queue[_Request] = asyncio.Queue()
        self._queued_texts = 0  # texts of the requests in `_queue`
        self._workers: list[asyncio.Task[None]] = []

    @property
    def name(self) -> str:
        return self.embedder.name

    async def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        if len(self._workers) < self._streams or any(worker.done() for worker in self._workers):
            self._workers = [worker for worker in self._workers if not worker.done()]
            self._workers += [asyncio.create_task(self._run()) for _ in range(self._streams - len(self._workers))]
        request = _Request(texts)
        self._queued_texts += len(texts)
        await self._queue.put(request)
        return await request.done

    async def close(self) -> None:
        for worker in self._workers:
            worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await worker
        log.info("embedding batches: %s", self.stats.summary())

    async def _run(self) -> None:
        while True:
            batch = await self._gather()
            await self._embed(batch)

    async def _gather(self) -> list[_Request]:
        """Wait for one request, take what is queued, linger for more until `max_batch` texts or the deadline.

        With several streams a call takes at most its share of what is queued, so that when a burst ends
        the streams finish its last texts together rather than one stream working through them alone.
        """
        batch = [await self._queue.get()]
        size = len(batch[0].texts)
        limit = min(self._max_batch, -(-self._queued_texts // self._streams))
        self._queued_texts -= size
        started = time.monotonic()
        deadline = started + self._linger
        while size < limit or (size < self._max_batch and self._queue.empty()):
            if self._queue.empty():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                try:
                    async with asyncio.timeout(remaining):
                        request = await self._queue.get()
                except TimeoutError:
                    break
            else:
                request = self._queue.get_nowait()
            batch.append(request)
            size += len(request.texts)
            self._queued_texts -= len(request.texts)
        self.stats.linger_seconds += time.monotonic() - started
        return batch

    async def _embed(self, batch: list[_Request]) -> None:
        texts = [text for request in batch for text in request.texts]
        lengths = [self._length(text) for text in texts]
        # Longest first, as sentence-transformers orders them itself; the i-th sorted text is texts[order[i]].
        order = sorted(range(len(texts)), key=lambda i: -lengths[i])
        self._count(batch, lengths)
        try:
            sorted_vectors = await asyncio.to_thread(self.embedder.embed, [texts[i] for i in order])
        except Exception as exc:  # noqa: BLE001 — each waiting handler decides what a failure means
            for request in batch:
                if not request.done.done():
                    request.done.set_exception(exc)
            return
        vectors: list[list[float]] = [[] for _ in texts]
        for position, source in enumerate(order):
            vectors[source] = sorted_vectors[position]
        start = 0
        for request in batch:
            end = start + len(request.texts)
            if not request.done.done():  # a caller that was cancelled meanwhile
                request.done.set_result(vectors[start:end])
            start = end

    def _count(self, batch: list[_Request], lengths: list[int]) -> None:
        stats = self.stats
        stats.calls += 1
        stats.requests += len(batch)
        stats.texts += len(lengths)
        stats.tokens += sum(lengths)
        stats.padded_tokens += padded_tokens(lengths)
