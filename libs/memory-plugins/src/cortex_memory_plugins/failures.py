"""Count and log each failed call to an external agent-memory backend (OpenTelemetry metrics API)."""

import logging

from opentelemetry import metrics
from opentelemetry.metrics import Meter

from cortex_contracts.memory import ExternalMemoryFailure

log = logging.getLogger(__name__)

FAILURES_METRIC = "cortex.memory.external.failures"


class FailureRecorder:
    """One counter, `cortex.memory.external.failures{source, operation, reason}`, and a log line per failure."""

    def __init__(self, source: str, meter: Meter | None = None) -> None:
        self.source = source
        self.counter = (meter or metrics.get_meter("cortex_memory_plugins")).create_counter(
            FAILURES_METRIC,
            unit="{failure}",
            description="Calls to an external agent-memory backend that gave nothing, by reason.",
        )

    def record(self, operation: str, reason: ExternalMemoryFailure, elapsed: float, detail: str) -> None:
        self.counter.add(1, {"source": self.source, "operation": operation, "reason": reason.value})
        log.warning(
            "external agent memory failed source=%s operation=%s reason=%s elapsed_ms=%.0f detail=%s",
            self.source,
            operation,
            reason.value,
            elapsed * 1000,
            detail[:300],
        )
