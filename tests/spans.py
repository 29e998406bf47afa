"""Finding the spans the in-process services recorded, to follow a message or request through them."""

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from opentelemetry import context, trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

tracer = trace.get_tracer("tests")


@contextmanager
def new_trace(name: str) -> Iterator[int]:
    """Run the block in a fresh root span; yields its trace id, which everything sent inside carries."""
    with tracer.start_as_current_span(name, context=context.Context()) as span:
        yield span.get_span_context().trace_id


async def wait_for_spans(
    spans: InMemorySpanExporter,
    match: Callable[[ReadableSpan], bool],
    *,
    count: int = 1,
    timeout: float = 15,
) -> list[ReadableSpan]:
    """Poll the finished spans until `count` of them match; fail after `timeout` seconds."""
    async with asyncio.timeout(timeout):
        while True:
            found = [span for span in spans.get_finished_spans() if match(span)]
            if len(found) >= count:
                return found
            await asyncio.sleep(0.05)


def in_trace(trace_id: int, kind: SpanKind | None = None) -> Callable[[ReadableSpan], bool]:
    def match(span: ReadableSpan) -> bool:
        assert span.context is not None
        return span.context.trace_id == trace_id and (kind is None or span.kind is kind)

    return match


async def wait_handled(
    spans: InMemorySpanExporter, trace_id: int, *, count: int = 1, timeout: float = 15
) -> list[ReadableSpan]:
    """Wait until a consumer has settled (acked, naked or dead-lettered) `count` deliveries in the trace.

    The consumer's `<subject> process` span ends only once the message is settled, so this proves a
    message was handled even when handling it changed nothing.
    """
    return await wait_for_spans(spans, in_trace(trace_id, SpanKind.CONSUMER), count=count, timeout=timeout)
