"""A Qdrant server that hangs costs one timeout, not one per call: after a failure the store fails at once
for `fail_fast_seconds`, then tries the server again. Against a socket that reads requests and never
answers, counted by the requests it receives."""

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from cortex_contracts.vector_store import VectorStoreUnavailable
from cortex_vector_stores.qdrant import QdrantVectorStore
from cortex_vector_stores.settings import QdrantSettings

ORG = uuid.uuid4()


class HungServer:
    def __init__(self) -> None:
        self.requests = 0

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while line := await reader.readline():
            if line.startswith((b"GET ", b"POST ", b"PUT ", b"DELETE ")):
                self.requests += 1
        writer.close()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[str]:
        server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server:
            yield f"http://127.0.0.1:{port}"
            server.close()


async def test_after_a_timeout_calls_fail_at_once_until_the_retry_time_has_passed() -> None:
    hung = HungServer()
    async with hung.running() as url:
        store = QdrantVectorStore(QdrantSettings(url=url, timeout_seconds=1, fail_fast_seconds=1.5))
        try:
            with pytest.raises(VectorStoreUnavailable, match="qdrant"):
                await store.search(ORG, [1.0] * 384, 5)
            asked = hung.requests
            assert asked >= 1

            with pytest.raises(VectorStoreUnavailable, match="tried again in"):
                await store.search(ORG, [1.0] * 384, 5)
            with pytest.raises(VectorStoreUnavailable, match="tried again in"):
                await store.delete_document(ORG, uuid.uuid4(), 2)
            assert hung.requests == asked  # before: each call waited out its own timeout

            assert await store.health() is not None  # the probe is never refused: it asks the server
            assert hung.requests > asked
            asked = hung.requests

            await asyncio.sleep(1.6)
            with pytest.raises(VectorStoreUnavailable, match="qdrant"):
                await store.search(ORG, [1.0] * 384, 5)
            assert hung.requests > asked
        finally:
            await store.close()


async def test_with_no_retry_time_every_call_tries_the_server() -> None:
    hung = HungServer()
    async with hung.running() as url:
        store = QdrantVectorStore(QdrantSettings(url=url, timeout_seconds=1, fail_fast_seconds=0))
        try:
            for expected in (1, 2):
                with pytest.raises(VectorStoreUnavailable):
                    await store.search(ORG, [1.0] * 384, 5)
                assert hung.requests >= expected
        finally:
            await store.close()
