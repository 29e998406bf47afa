"""Where the CPU went during a measurement: per service, PostgreSQL, NATS, this process, and the rest
of the machine (other work on a shared host)."""

import os
import time
from dataclasses import dataclass

import psutil

BUSY_FIELDS = ("user", "nice", "system", "irq", "softirq", "steal")


@dataclass(frozen=True)
class CpuSnapshot:
    at: float
    by_name: dict[str, float]
    machine: float


def _process_seconds(pid: int, *, with_children: bool) -> float:
    try:
        root = psutil.Process(pid)
        processes = [root, *root.children(recursive=True)] if with_children else [root]
    except psutil.Error:
        return 0.0
    total = 0.0
    for process in processes:
        try:
            times = process.cpu_times()
        except psutil.Error:
            continue
        # children_*: descendants that exited and were reaped (PostgreSQL backends of closed connections)
        total += times.user + times.system + times.children_user + times.children_system
    return total


def _machine_seconds() -> float:
    times = psutil.cpu_times()
    return sum(getattr(times, name, 0.0) for name in BUSY_FIELDS)


class CpuMeter:
    """Each named root process is counted with all its descendants, live or exited (PostgreSQL backends);
    copies of a service (`aggregator`, `aggregator.2`, …) are counted together under its name."""

    def __init__(self, roots: dict[str, int]) -> None:
        self.roots = roots

    def snapshot(self) -> CpuSnapshot:
        by_name: dict[str, float] = {}
        for name, pid in self.roots.items():
            service = name.split(".", maxsplit=1)[0]
            by_name[service] = by_name.get(service, 0.0) + _process_seconds(pid, with_children=True)
        by_name["bench"] = _process_seconds(os.getpid(), with_children=False)
        return CpuSnapshot(time.perf_counter(), by_name, _machine_seconds())


def busy_cores(meter: CpuMeter, names: tuple[str, ...], seconds: float = 1.0) -> float:
    """How many cores the named processes used over the next `seconds` (blocking)."""
    before = meter.snapshot()
    time.sleep(seconds)
    after = meter.snapshot()
    return sum(after.by_name.get(n, 0.0) - before.by_name.get(n, 0.0) for n in names) / (after.at - before.at)


def usage(before: CpuSnapshot, after: CpuSnapshot) -> dict[str, float]:
    """CPU seconds per name between two snapshots, plus `other` (the rest of the machine) and `wall`."""
    spent = {name: after.by_name[name] - before.by_name.get(name, 0.0) for name in after.by_name}
    spent["other"] = max(0.0, (after.machine - before.machine) - sum(spent.values()))
    spent["wall"] = after.at - before.at
    spent["cores"] = float(psutil.cpu_count() or 1)
    return spent


def describe(spent: dict[str, float]) -> str:
    """`indexer 12.3 s (41%)` …, as shares of the machine's capacity (cores × wall time)."""
    capacity = spent["wall"] * spent["cores"]
    parts = [
        f"{name} {seconds:.1f} s ({100 * seconds / capacity:.0f}%)"
        for name, seconds in spent.items()
        if name not in ("wall", "cores")
    ]
    idle = max(0.0, capacity - sum(v for k, v in spent.items() if k not in ("wall", "cores")))
    return ", ".join([*parts, f"idle {idle:.1f} s ({100 * idle / capacity:.0f}%)"])
