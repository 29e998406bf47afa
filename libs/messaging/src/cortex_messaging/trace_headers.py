"""W3C trace context carried in NATS headers, so one request or event is one trace."""

from opentelemetry import context, propagate


def inject(headers: dict[str, str] | None = None) -> dict[str, str]:
    """Return `headers` plus `traceparent` (and `tracestate`) for the current span."""
    carrier = dict(headers or {})
    propagate.inject(carrier)
    return carrier


def extract(headers: dict[str, str] | None) -> context.Context:
    return propagate.extract(headers or {})
