"""Pick the span exporter from settings: none, console, or OTLP over HTTP."""

from enum import StrEnum

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter


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
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    exporter = _exporter(kind, otlp_endpoint)
    if exporter is not None:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return provider
