"""When `cortex run` restarts a service that stopped on its own, and when it gives up.

A service stops on its own when it crashed, was killed, or lost what it cannot work without (a NATS
client closed for good: cortex_messaging.connection). Restarting it is what a process manager would
do. One that keeps stopping (a setting it cannot start with, a bug on every start) is restarted after
growing pauses, and after `max_restarts` within `window_seconds` everything stops: looping for ever
would hide the failure in the log.
"""

from collections import defaultdict
from dataclasses import dataclass, field


@dataclass
class RestartPolicy:
    max_restarts: int = 5
    window_seconds: float = 600.0
    first_delay_seconds: float = 1.0
    max_delay_seconds: float = 30.0
    _restarts: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))

    def delay(self, name: str, now: float) -> float | None:
        """Seconds to wait before restarting `name`, which stopped at `now` (monotonic); None: give up."""
        recent = [at for at in self._restarts[name] if now - at < self.window_seconds]
        if len(recent) >= self.max_restarts:
            return None
        recent.append(now)
        self._restarts[name] = recent
        return min(self.first_delay_seconds * 2.0 ** (len(recent) - 1), self.max_delay_seconds)
