"""Pick the span exporter from settings: none, console, or OTLP over HTTP."""

from enum import StrEnum

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, DEFAULT_ON


class TraceExporter(StrEnum):
    NONE = "none"
    CONSOLE = "console"
    OTLP = "otlp"


def _exporter(kind: TraceExporter, otlp_endpoint: str | None) -> SpanExporter | None:
    if kind is TraceExporter.CONSOLE:
        return ConsoleSpanExporter()
    if kind is TraceExporter.OTLP:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter(endpoint=otlp_endpoint) if otlp_endpoint else OTLPSpanExporter()
    return None


def configure_tracing(service_name: str, kind: TraceExporter, otlp_endpoint: str | None = None) -> TracerProvider:
    """Install the global tracer provider. W3C trace context is OpenTelemetry's default propagator."""
    provider = make_provider(service_name, kind, otlp_endpoint)
    trace.set_tracer_provider(provider)
    return provider


def make_provider(service_name: str, kind: TraceExporter, otlp_endpoint: str | None = None) -> TracerProvider:
    """A tracer provider exporting to `kind`. With no exporter nothing is sampled: spans are not recorded
    (that cost ~1 ms of CPU per search across the gateway and the aggregator, for spans then dropped), yet
    every trace id is still made and carried."""
    exporter = _exporter(kind, otlp_endpoint)
    sampler = ALWAYS_OFF if exporter is None else DEFAULT_ON
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}), sampler=sampler)
    if exporter is not None:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider
