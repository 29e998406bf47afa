"""Log lines of an embedding call carry the trace of a request in that call, not of the request that happened
to start the batcher's workers (QA 34, B8: every retry warning carried the first document's trace_id)."""

import contextvars
import logging

from cortex_embedding.batcher import BatchingEmbedder
from tests.scripted_endpoint import ScriptedEndpoint, Status
from tests.unit.conftest import MakeEmbedder

TRACE: contextvars.ContextVar[str] = contextvars.ContextVar("trace", default="-")


class TraceOfEachLine(logging.Handler):
    """Reads the context variable where the line is logged, as the trace_id in the log format is read."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[tuple[str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append((record.getMessage(), TRACE.get()))


async def test_a_retry_warning_carries_the_trace_of_the_request_being_retried(
    scripted: ScriptedEndpoint, make_embedder: MakeEmbedder
) -> None:
    batcher = BatchingEmbedder(make_embedder())
    handler = TraceOfEachLine()
    logger = logging.getLogger("cortex_embedding.openai_compatible")
    logger.addHandler(handler)
    try:
        TRACE.set("first-document")
        await batcher.embed(["first"])  # starts the workers, in this context
        TRACE.set("second-document")
        scripted.script.append(Status(503))
        await batcher.embed(["second"])
    finally:
        logger.removeHandler(handler)
        await batcher.close()

    retries = [trace for message, trace in handler.lines if "retry 1/3" in message]
    assert retries == ["second-document"]
