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
- Fair turns: a request of more than `max_batch` texts (a long document: thousands of passages) is
  embedded a call's worth at a time, going back behind the requests queued meanwhile after each turn.
  Taken whole, it held the model for minutes while every other document, of any organization, waited
  for it; now a short document waits for the calls in progress and a turn of each long request ahead
  of it. Smaller requests are never split.
- Sorted calls: the texts of a call go to the model longest first, so slices hold texts of similar
  length whatever the embedder; the vectors are put back in each caller's order.

- Streams: with `streams` > 1, that many calls run at once, each taking its share (1/`streams`) of
  what is queued when it starts, up to `max_batch`: full calls in a steady stream, and at the end of a
  burst every stream works through its part of the last passages rather than one stream alone.
  For the local model on 2 cores, two single-threaded calls at a time beat one call on two threads
  (bench/ingest): an operator split across threads ends at a barrier, and on a machine that the
  indexer shares with PostgreSQL and its own event loop, one preempted thread stalls the other.

A model failure fails every request of that call (each handler decides what it means), and the turns
still queued of a failed long request are dropped, as are those of a caller that gave up; the next call
starts afresh.
"""

import asyncio
import contextlib
import contextvars
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from cortex_embedding.embedder import Embedder
from cortex_embedding.errors import EmbeddingRejected
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
    caller: contextvars.Context = field(default_factory=contextvars.copy_context)  # its trace, for log lines
    taken: int = 0  # texts handed to calls so far (a long request is taken in turns)
    embedded: int = 0  # texts whose vectors are in `vectors`
    vectors: list[list[float]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.vectors = [[] for _ in self.texts]


@dataclass(frozen=True)
class _Part:
    """Texts `start:end` of a request, in one call."""

    request: _Request
    start: int
    end: int

    @property
    def texts(self) -> list[str]:
        return self.request.texts[self.start : self.end]


def _fail(batch: list[_Part], exc: Exception) -> None:
    for part in batch:
        if not part.request.done.done():
            part.request.done.set_exception(exc)


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
    only a request of more than `max_batch` texts is split, into turns). `linger_seconds` bounds how
    long the model waits idle to fill a call.
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
            # A context of their own: made in this caller's, the workers kept its trace for every call (QA 34).
            self._workers += [
                asyncio.create_task(self._run(), context=contextvars.Context())
                for _ in range(self._streams - len(self._workers))
            ]
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

    async def _gather(self) -> list[_Part]:
        """Wait for one request, take what is queued, linger for more until `max_batch` texts or the deadline.

        With several streams a call takes at most its share of what is queued, so that when a burst ends
        the streams finish its last texts together rather than one stream working through them alone.
        """
        first = None
        while first is None:  # None: a request whose caller is gone
            request = await self._queue.get()
            limit = min(self._max_batch, -(-self._queued_texts // self._streams))
            first = self._take(request, room=limit)
        batch, size = [first], first.end - first.start
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
            part = self._take(request, room=(limit if size < limit else self._max_batch) - size)
            if part is not None:
                batch.append(part)
                size += part.end - part.start
        self.stats.linger_seconds += time.monotonic() - started
        return batch

    def _take(self, request: _Request, room: int) -> _Part | None:
        """The request's next part: all that is left of it, or a turn of `room` texts for a long one (its
        rest goes back behind the queue). None for a request whose caller is gone or that failed."""
        left = len(request.texts) - request.taken
        if request.done.done():
            self._queued_texts -= left
            return None
        count = left if left <= self._max_batch else min(left, room)
        part = _Part(request, request.taken, request.taken + count)
        request.taken += count
        self._queued_texts -= count
        if request.taken < len(request.texts):
            self._queue.put_nowait(request)
        return part

    async def _embed(self, batch: list[_Part]) -> None:
        texts = [text for part in batch for text in part.texts]
        lengths = [self._length(text) for text in texts]
        # Longest first, as sentence-transformers orders them itself; the i-th sorted text is texts[order[i]].
        order = sorted(range(len(texts)), key=lambda i: -lengths[i])
        self._count(batch, lengths)
        # In the context of the call's first request (a copy: a context runs in one thread at a time), so what
        # the model logs (an endpoint's retries) carries the trace of a request it embeds.
        caller = batch[0].request.caller.copy()
        try:
            sorted_vectors = await asyncio.get_running_loop().run_in_executor(
                None, caller.run, self.embedder.embed, [texts[i] for i in order]
            )
        except EmbeddingRejected as exc:
            if len(batch) == 1:
                _fail(batch, exc)
                return
            # What the endpoint refuses may be one request's text (too long for its context, say): each request
            # alone, so that the others are not indexed lexical-only for it (QA 47).
            for part in batch:
                await self._embed([part])
            return
        except Exception as exc:  # noqa: BLE001 — each waiting handler decides what a failure means
            _fail(batch, exc)
            return
        vectors: list[list[float]] = [[] for _ in texts]
        for position, source in enumerate(order):
            vectors[source] = sorted_vectors[position]
        start = 0
        for part in batch:
            request, count = part.request, part.end - part.start
            request.vectors[part.start : part.end] = vectors[start : start + count]
            request.embedded += count
            start += count
            if request.embedded == len(request.texts) and not request.done.done():  # done: cancelled meanwhile
                request.done.set_result(request.vectors)

    def _count(self, batch: list[_Part], lengths: list[int]) -> None:
        stats = self.stats
        stats.calls += 1
        stats.requests += len(batch)
        stats.texts += len(lengths)
        stats.tokens += sum(lengths)
        stats.padded_tokens += padded_tokens(lengths)
