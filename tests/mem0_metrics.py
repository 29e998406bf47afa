"""Read the external-memory failure counter from an in-memory OpenTelemetry metric reader."""

from collections import Counter

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, NumberDataPoint

from cortex_memory_plugins.failures import FAILURES_METRIC


def metered(reader: InMemoryMetricReader) -> MeterProvider:
    """A meter provider of its own (not the global one), read by `reader`."""
    return MeterProvider(metric_readers=[reader])


def failures(reader: InMemoryMetricReader) -> Counter[tuple[str, str]]:
    """(operation, reason) → failures counted so far (cumulative)."""
    counted: Counter[tuple[str, str]] = Counter()
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data else []:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name != FAILURES_METRIC:
                    continue
                for point in metric.data.data_points:
                    assert isinstance(point, NumberDataPoint)
                    attributes = point.attributes or {}
                    counted[(str(attributes["operation"]), str(attributes["reason"]))] += int(point.value)
    return counted
