"""Core NATS request/reply with a queue group, trace context in headers."""

import asyncio
import logging
from collections.abc import Awaitable, Callable

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.errors import MaxPayloadError
from opentelemetry import trace
from opentelemetry.trace import SpanKind

from cortex_messaging.connection import refuse_while_reconnecting
from cortex_messaging.trace_headers import extract, inject

log = logging.getLogger(__name__)
tracer = trace.get_tracer(__name__)

RpcHandler = Callable[[bytes], Awaitable[bytes]]


async def serve(
    nc: NATS,
    subject: str,
    queue: str,
    handler: RpcHandler,
    *,
    concurrency: int = 32,
    oversized: Callable[[int, int], bytes] | None = None,
) -> Subscription:
    """Answer requests on `subject`; the handler must turn every failure into a reply itself.

    `oversized(size, max_payload)`: the reply to send instead of one too large for NATS, so that the
    caller hears why at once rather than waiting out its timeout.
    """
    slots = asyncio.Semaphore(concurrency)
    tasks: set[asyncio.Task[None]] = set()

    async def answer(msg: Msg) -> None:
        async with slots:
            with tracer.start_as_current_span(
                f"{subject} process",
                context=extract(dict(msg.headers or {})),
                kind=SpanKind.SERVER,
                attributes={"messaging.system": "nats", "messaging.destination.name": subject},
            ):
                reply = await handler(msg.data)
            try:
                await msg.respond(reply)
            except MaxPayloadError:  # the client refuses it before sending: the connection stays up
                log.exception(
                    "a reply on %s is %d bytes, over NATS's max_payload (%d)", subject, len(reply), nc.max_payload
                )
                if oversized is not None:
                    await msg.respond(oversized(len(reply), nc.max_payload))

    async def on_message(msg: Msg) -> None:
        # nats-py runs one callback at a time per subscription: answer in tasks to serve clients in parallel.
        task = asyncio.create_task(answer(msg))
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    return await nc.subscribe(subject, queue=queue, cb=on_message)


async def request(nc: NATS, subject: str, payload: bytes, *, timeout: float) -> bytes:
    with tracer.start_as_current_span(
        f"{subject} request",
        kind=SpanKind.CLIENT,
        attributes={"messaging.system": "nats", "messaging.destination.name": subject},
    ):
        refuse_while_reconnecting(nc)
        reply = await nc.request(subject, payload, timeout=timeout, headers=inject())
        return reply.data
