"""The indexer's model calls at once default to the CPUs it may use: a cgroup's quota bounds them (a pod's
CPU limit), which os.cpu_count(), the node's, did not."""

import os
from pathlib import Path

from cortex_indexer.cpus import cpu_quota, usable_cpus


def test_a_cgroup_v2_quota_bounds_the_cpus(tmp_path: Path) -> None:
    (tmp_path / "cpu.max").write_text("150000 100000\n")
    assert cpu_quota(tmp_path) == 1.5
    assert usable_cpus(tmp_path) == min(2, len(os.sched_getaffinity(0)))


def test_a_cgroup_v1_quota_counts_too_and_no_limit_is_the_affinity(tmp_path: Path) -> None:
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("100000\n")
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert usable_cpus(tmp_path) == 1
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")  # v1's "no limit"
    assert cpu_quota(tmp_path) is None
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert cpu_quota(tmp_path) is None
    assert usable_cpus(tmp_path) == len(os.sched_getaffinity(0))
    assert usable_cpus(tmp_path / "nowhere") == len(os.sched_getaffinity(0))
