"""Coalesce concurrent embed requests into one model call, run in a worker thread.

Handlers embed one document at a time; the model is far faster per text in batches. Requests that
arrive while the model is busy are gathered into the next batch.
"""

import asyncio
import contextlib
from dataclasses import dataclass, field

from cortex_embedding.embedder import Embedder


@dataclass
class _Request:
    texts: list[str]
    done: asyncio.Future[list[list[float]]] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


class BatchingEmbedder:
    def __init__(self, embedder: Embedder, max_batch: int = 128) -> None:
        self.embedder = embedder
        self._max_batch = max_batch
        self._queue: asyncio.Queue[_Request] = asyncio.Queue()
        self._worker: asyncio.Task[None] | None = None

    @property
    def name(self) -> str:
        return self.embedder.name

    async def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._run())
        request = _Request(texts)
        await self._queue.put(request)
        return await request.done

    async def close(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker

    async def _run(self) -> None:
        while True:
            batch = [await self._queue.get()]
            size = len(batch[0].texts)
            while size < self._max_batch and not self._queue.empty():
                request = self._queue.get_nowait()
                batch.append(request)
                size += len(request.texts)
            texts = [text for request in batch for text in request.texts]
            try:
                vectors = await asyncio.to_thread(self.embedder.embed, texts)
            except Exception as exc:  # noqa: BLE001 — each waiting handler decides what a failure means
                for request in batch:
                    if not request.done.done():
                        request.done.set_exception(exc)
                continue
            start = 0
            for request in batch:
                end = start + len(request.texts)
                if not request.done.done():
                    request.done.set_result(vectors[start:end])
                start = end
