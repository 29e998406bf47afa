"""A fetch that fails while NATS restarts is tried again; the consumer does not end. Before (QA 28): after a
NATS restart, JetStream's "not ready" 503 ended an indexer copy's consumers and the process with them."""

import asyncio
from typing import Any, cast

from nats.errors import ConnectionReconnectingError
from nats.js import JetStreamContext
from nats.js.errors import ServiceUnavailableError

from cortex_messaging import consumer
from cortex_messaging.consumer import ConsumerSpec, DurableConsumer
from cortex_messaging.delivery import Delivery

SPEC = ConsumerSpec(stream="KB", durable="indexer-kb", filter_subjects=("kb.>",))


class RestartingSubscription:
    """Fails as a restarting server does, then answers (with nothing to deliver) and stops the consumer."""

    def __init__(self, stop: asyncio.Event) -> None:
        self.failures: list[Exception] = [ServiceUnavailableError(), ConnectionReconnectingError()]
        self.fetches = 0
        self._stop = stop

    async def fetch(self, batch: int, timeout: float) -> list[Any]:
        self.fetches += 1
        if self.failures:
            raise self.failures.pop(0)
        self._stop.set()
        return []

    async def unsubscribe(self) -> None:
        pass


class FakeJetStream:
    def __init__(self, subscription: RestartingSubscription) -> None:
        self.subscription = subscription

    async def add_consumer(self, stream: str, config: Any) -> None:
        pass

    async def pull_subscribe_bind(self, durable: str, stream: str) -> RestartingSubscription:
        return self.subscription


async def never_called(delivery: Delivery) -> None:
    raise AssertionError("nothing was delivered")


async def test_fetch_failures_while_nats_restarts_are_retried(monkeypatch: Any) -> None:
    monkeypatch.setattr(consumer, "FETCH_RETRY_SECONDS", 0.01, raising=False)
    stop = asyncio.Event()
    subscription = RestartingSubscription(stop)

    async with asyncio.timeout(5):
        await DurableConsumer(cast(JetStreamContext, FakeJetStream(subscription)), SPEC, never_called).run(stop)

    assert subscription.fetches == 3  # two failures, then the fetch that answered
