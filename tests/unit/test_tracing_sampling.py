"""With no exporter, spans are not recorded, but a trace id is still made and carried to the next service."""

from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.propagate import inject
from opentelemetry.sdk.trace import TracerProvider

from cortex_telemetry.tracing import TraceExporter, make_provider


@pytest.fixture
def provider(request: pytest.FixtureRequest) -> Iterator[TracerProvider]:
    made = make_provider("test", request.param)  # not installed: the global provider is the tests'
    yield made
    made.shutdown()


@pytest.mark.parametrize("provider", [TraceExporter.NONE], indirect=True)
def test_no_exporter_records_nothing_but_carries_the_trace(provider: TracerProvider) -> None:
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("work") as span:
        headers: dict[str, str] = {}
        inject(headers, context=trace.set_span_in_context(span))
    assert not span.is_recording()
    assert span.get_span_context().trace_id != 0
    assert headers["traceparent"].split("-")[1] == f"{span.get_span_context().trace_id:032x}"


@pytest.mark.parametrize("provider", [TraceExporter.CONSOLE], indirect=True)
def test_an_exporter_records_every_span(provider: TracerProvider) -> None:
    with provider.get_tracer("test").start_as_current_span("work") as span:
        assert span.is_recording()
