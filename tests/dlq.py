"""Reading dead letters back from the DLQ stream, one organization's at a time."""

import asyncio
import json
import uuid
from dataclasses import dataclass
from typing import Any

from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import JetStreamContext

from cortex_contracts.subjects import STREAM_DLQ


@dataclass(frozen=True)
class DeadLetter:
    subject: str
    headers: dict[str, str]
    record: dict[str, Any]


async def read_dead_letters(
    js: JetStreamContext, org_id: uuid.UUID, count: int, *, timeout: float = 15, stream: str = "kb"
) -> list[DeadLetter]:
    """Exactly `count` dead letters of `<stream>.<org_id>.>` events (`kb`, `memory`): waits for them, then
    checks there are no more."""
    sub = await js.pull_subscribe(f"dlq.{stream}.{org_id}.>", stream=STREAM_DLQ)
    letters: list[DeadLetter] = []
    try:
        async with asyncio.timeout(timeout):
            while len(letters) < count:
                try:
                    msgs = await sub.fetch(count - len(letters), timeout=1)
                except (TimeoutError, NatsTimeoutError):
                    continue
                for msg in msgs:
                    await msg.ack()
                    letters.append(DeadLetter(msg.subject, dict(msg.headers or {}), json.loads(msg.data)))
        info = await sub.consumer_info()
        assert info.num_pending == 0, f"{info.num_pending} more dead letters than the {count} expected"
    finally:
        await sub.unsubscribe()
    return letters
