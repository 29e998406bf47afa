"""A durable JetStream pull consumer: ack after the handler commits, retry with backoff, then dead-letter.

Every copy of a service binds the same durable, so the copies share the work. The server redelivers
without limit; this runner counts deliveries itself, so even a message that crashes the process on
every attempt ends in the DLQ instead of looping forever. A handler that handled a message by
recording a failure returns `RecordedFailure`: the message is acked and a copy goes to the DLQ.

A message is settled (acked, or termed) only once its dead letter, if it has one, is in the DLQ. A letter
that cannot be sent is tried again with the backoff, at the message's next deliveries; after twice
`max_deliver` deliveries the message is termed, logged at ERROR with its event id and stream sequence:
it stays in its stream, but is not delivered again.

A failure that says a dependency is down (`ConsumerSpec.unavailable`: the database cannot be reached) is no
fault of the message: the handler is tried again in the same delivery, waiting longer each time (kept in
progress meanwhile), until the dependency answers or the consumer stops. So an outage longer than the
backoff no longer sends every event in flight to the DLQ, and it is logged once, not once a try an event.
"""

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass

from nats.aio.msg import Msg
from nats.errors import ConnectionClosedError
from nats.errors import Error as NatsError
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from cortex_messaging.dead_letter import DeadLetter, send_dead_letter
from cortex_messaging.delivery import Delivery, Handler, PoisonMessage, RecordedFailure, parse_delivery
from cortex_messaging.trace_headers import extract

log = logging.getLogger(__name__)
FETCH_RETRY_SECONDS = 1.0
tracer = trace.get_tracer(__name__)

__all__ = ["ConsumerSpec", "DurableConsumer", "Handler"]


@dataclass(frozen=True)
class ConsumerSpec:
    stream: str
    durable: str
    filter_subjects: tuple[str, ...]
    max_deliver: int = 5
    backoff_seconds: tuple[float, ...] = (1.0, 5.0, 15.0, 60.0)
    ack_wait_seconds: float = 30.0
    batch: int = 32
    concurrency: int = 16
    unavailable: Callable[[BaseException], bool] = lambda exc: False  # a dependency down: wait, do not count
    outage_retry_seconds: tuple[float, float] = (1.0, 30.0)  # the first wait, doubled up to the second


def _consumer_config(spec: ConsumerSpec) -> ConsumerConfig:
    return ConsumerConfig(
        durable_name=spec.durable,
        ack_policy=AckPolicy.EXPLICIT,
        deliver_policy=DeliverPolicy.ALL,
        ack_wait=spec.ack_wait_seconds,
        max_deliver=-1,
        max_ack_pending=max(1000, spec.batch * 4),
        filter_subjects=list(spec.filter_subjects),
    )


class DurableConsumer:
    def __init__(self, js: JetStreamContext, spec: ConsumerSpec, handler: Handler) -> None:
        self._js = js
        self._spec = spec
        self._handler = handler
        self._slots = asyncio.Semaphore(spec.concurrency)
        self._stop = asyncio.Event()
        self._held = 0  # deliveries waiting out an outage

    async def run(self, stop: asyncio.Event) -> None:
        self._stop = stop
        spec = self._spec
        await self._js.add_consumer(spec.stream, _consumer_config(spec))
        sub = await self._js.pull_subscribe_bind(durable=spec.durable, stream=spec.stream)
        in_flight: set[asyncio.Task[None]] = set()
        log.info("consuming %s from %s as %s", spec.filter_subjects, spec.stream, spec.durable)
        try:
            while not stop.is_set():
                # Take only what a free slot can start at once: a message left waiting for a slot gets no
                # keep-alive, passes its ack wait under load and is delivered again (work done twice).
                free = spec.concurrency - len(in_flight)
                if free <= 0:
                    await asyncio.wait(in_flight, return_when=asyncio.FIRST_COMPLETED)
                    continue
                try:
                    msgs = await sub.fetch(min(spec.batch, free), timeout=1.0)
                except (TimeoutError, NatsTimeoutError):
                    continue
                except ConnectionClosedError:  # for good: the service stops (connection.py's `on_lost`)
                    log.warning("%s: the NATS client is closed; consuming no more", spec.durable)
                    break
                except NatsError as exc:  # JetStream not ready yet after a server restart, a reconnect under way
                    log.warning(
                        "%s: fetching failed (%r); trying again in %g s", spec.durable, exc, FETCH_RETRY_SECONDS
                    )
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), FETCH_RETRY_SECONDS)
                    continue
                for msg in msgs:
                    await self._slots.acquire()
                    task = asyncio.create_task(self._handle(msg))
                    in_flight.add(task)
                    task.add_done_callback(in_flight.discard)
        finally:
            if in_flight:
                await asyncio.gather(*in_flight, return_exceptions=True)
            with contextlib.suppress(Exception):
                await sub.unsubscribe()

    async def _handle(self, msg: Msg) -> None:
        try:
            headers = dict(msg.headers or {})
            with tracer.start_as_current_span(
                f"{msg.subject} process",
                context=extract(headers),
                kind=SpanKind.CONSUMER,
                attributes={
                    "messaging.system": "nats",
                    "messaging.destination.name": msg.subject,
                    "messaging.consumer.group.name": self._spec.durable,
                },
            ) as span:
                await self._settle(msg, headers, span)
        except Exception:
            log.exception("could not settle message on %s", msg.subject)
        finally:
            self._slots.release()

    async def _settle(self, msg: Msg, headers: dict[str, str], span: trace.Span) -> None:
        deliveries = msg.metadata.num_delivered or 1
        if deliveries > self._spec.max_deliver:
            await self._dead_letter(msg, headers, "max_deliver exceeded", "no outcome recorded (crash or timeout)")
            return
        heartbeat = asyncio.create_task(self._keep_alive(msg))
        try:
            final = deliveries >= self._spec.max_deliver
            outcome = await self._through_outages(parse_delivery(msg.subject, msg.data, deliveries, final=final))
        except PoisonMessage as exc:
            span.set_status(Status(StatusCode.ERROR, str(exc)[:200]))
            log.warning("dead-lettering poison message on %s: %s", msg.subject, exc)
            await self._dead_letter(msg, headers, "poison message", str(exc))
            return
        except Exception as exc:
            span.record_exception(exc)
            span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            if deliveries >= self._spec.max_deliver:
                log.exception("giving up on %s after %d deliveries", msg.subject, deliveries)
                await self._dead_letter(msg, headers, "max_deliver exceeded", f"{type(exc).__name__}: {exc}")
            else:
                delay = self._backoff(deliveries)
                log.warning("retrying %s in %.0fs (delivery %d): %s", msg.subject, delay, deliveries, exc)
                await msg.nak(delay=delay)
            return
        finally:
            heartbeat.cancel()
        if outcome is not None:
            span.set_attribute("cortex.recorded_failure", outcome.error[:200])
            log.warning("%s handled as failed, copied to the DLQ: %s", msg.subject, outcome.error)
            if not await self._send_letter(msg, headers, outcome.reason, outcome.error):
                return
        await msg.ack()

    async def _through_outages(self, delivery: Delivery) -> RecordedFailure | None:
        """The handler's result, tried again while it fails for a dependency that is down."""
        wait, longest = self._spec.outage_retry_seconds
        held = False
        try:
            while True:
                try:
                    return await self._handler(delivery)
                except Exception as exc:
                    if self._stop.is_set() or not self._spec.unavailable(exc):
                        raise
                    if not held:
                        held = True
                        self._held += 1
                        if self._held == 1:
                            log.warning("%s: waiting for what is down to answer again: %s", self._spec.durable, exc)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), wait)
                wait = min(wait * 2, longest)
        finally:
            if held:
                self._held -= 1
                if self._held == 0:
                    log.info("%s: available again; the events that waited go on", self._spec.durable)

    def _backoff(self, deliveries: int) -> float:
        return self._spec.backoff_seconds[min(deliveries, len(self._spec.backoff_seconds)) - 1]

    def _letter(self, msg: Msg, headers: dict[str, str], reason: str, error: str) -> DeadLetter:
        return DeadLetter(
            subject=msg.subject,
            consumer=self._spec.durable,
            reason=reason,
            error=error,
            deliveries=msg.metadata.num_delivered or 1,
            headers=headers,
            payload=msg.data,
            origin=f"{msg.metadata.stream}/{msg.metadata.sequence.stream}",
        )

    async def _dead_letter(self, msg: Msg, headers: dict[str, str], reason: str, error: str) -> None:
        if await self._send_letter(msg, headers, reason, error):
            await msg.term()

    async def _send_letter(self, msg: Msg, headers: dict[str, str], reason: str, error: str) -> bool:
        """False if the letter could not be sent: the message is then delivered again after the backoff,
        or, after twice max_deliver deliveries, termed (see the module docstring)."""
        try:
            await send_dead_letter(self._js, self._letter(msg, headers, reason, error))
        except Exception:
            deliveries = msg.metadata.num_delivered or 1
            event = f"event {headers.get('Nats-Msg-Id', '(no id)')} on {msg.subject}"
            where = f"{msg.metadata.stream} sequence {msg.metadata.sequence.stream}"
            if deliveries >= 2 * self._spec.max_deliver:
                log.exception(
                    "could not dead-letter %s after %d deliveries: given up, it stays at %s", event, deliveries, where
                )
                await msg.term()
            else:
                delay = self._backoff(deliveries)
                log.exception("could not dead-letter %s (%s): delivering it again in %.0fs", event, where, delay)
                await msg.nak(delay=delay)
            return False
        return True

    async def _keep_alive(self, msg: Msg) -> None:
        """Tell the server we are still working, so a slow (large) document is not redelivered meanwhile."""
        while True:
            await asyncio.sleep(self._spec.ack_wait_seconds / 3)
            await msg.in_progress()
