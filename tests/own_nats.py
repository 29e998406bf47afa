"""For tests that run services of their own: a NATS server of their own, and the feed asked over it."""

import asyncio
import contextlib
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError

from cortex_contracts.base import WireModel
from cortex_contracts.rpc import FeedPage, FeedReply, FeedRequest, Reply, Result
from cortex_contracts.subjects import RPC_AGGREGATOR_FEED
from cortex_embedded_servers import EmbeddedNats
from cortex_messaging import rpc
from cortex_messaging.connection import connect, disconnect
from cortex_messaging.streams import ensure_streams


@contextlib.asynccontextmanager
async def own_nats_client(name: str) -> AsyncIterator[NATS]:
    """A client of a fresh embedded NATS server with Cortex's streams, stopped afterwards."""
    with tempfile.TemporaryDirectory(prefix="cx-nats-", dir="/tmp") as scratch:
        server = EmbeddedNats(Path(scratch) / "nats", port=0)
        url = server.start()
        try:
            nc = await connect(url, name=name)
            await ensure_streams(nc.jetstream())
            yield nc
            await disconnect(nc)
        finally:
            server.stop()


async def ask(nc: NATS, subject: str, request: WireModel, reply: type[Reply[Result]]) -> Result:
    """The aggregator's answer, waiting for a just-started aggregator's subscription to reach the server."""
    for _ in range(50):
        try:
            payload = await rpc.request(nc, subject, request.to_wire(), timeout=10)
            break
        except NoRespondersError:
            await asyncio.sleep(0.1)
    else:
        raise AssertionError("no aggregator answered")
    answer = reply.model_validate_json(payload)
    assert answer.result is not None, answer.error
    return answer.result


async def ask_feed(nc: NATS, request: FeedRequest) -> FeedPage:
    return await ask(nc, RPC_AGGREGATOR_FEED, request, FeedReply)
