"""How many CPUs the indexer may keep busy: its affinity, bounded by its cgroup's CPU quota.

`os.cpu_count()` sees the node: a pod limited to 2 CPUs on a 64-core node would run 64 model calls at once,
each throttled by the quota, with 64 batches' worth of memory in flight.
"""

import math
import os
from pathlib import Path

CGROUP = Path("/sys/fs/cgroup")


def usable_cpus(cgroup: Path = CGROUP) -> int:
    """At least 1."""
    available = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    quota = cpu_quota(cgroup)
    return max(1, min(available, math.ceil(quota))) if quota is not None else max(1, available)


def cpu_quota(cgroup: Path = CGROUP) -> float | None:
    """CPUs' worth of time per period the cgroup grants (v2 `cpu.max`, else v1 `cpu.cfs_*`); None: no limit."""
    try:
        quota, period = (cgroup / "cpu.max").read_text().split()[:2]
    except (OSError, ValueError):
        try:
            quota = (cgroup / "cpu" / "cpu.cfs_quota_us").read_text().strip()
            period = (cgroup / "cpu" / "cpu.cfs_period_us").read_text().strip()
        except OSError:
            return None
    try:
        granted, per = int(quota), int(period)
    except ValueError:  # "max": no limit
        return None
    return granted / per if granted > 0 and per > 0 else None
