"""Summaries of timings, plain-text tables and the JSON result files."""

import json
import os
import platform
import statistics
import subprocess
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.harness import RESULTS_DIR


def latency_summary(seconds: Sequence[float]) -> dict[str, float]:
    """p50/p95/p99/mean/max in milliseconds (inclusive quantiles, linear interpolation)."""
    ms = sorted(s * 1000 for s in seconds)
    if len(ms) == 1:
        return {"n": 1, "p50": ms[0], "p95": ms[0], "p99": ms[0], "mean": ms[0], "max": ms[0]}
    cuts = statistics.quantiles(ms, n=100, method="inclusive")
    return {
        "n": len(ms),
        "p50": cuts[49],
        "p95": cuts[94],
        "p99": cuts[98],
        "mean": statistics.fmean(ms),
        "max": ms[-1],
    }


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Left-aligned first column, right-aligned others; floats with 3 significant-ish decimals."""

    def cell(value: object) -> str:
        if isinstance(value, float):
            return f"{value:,.1f}" if abs(value) >= 100 else f"{value:.2f}"
        return str(value)

    cells = [[cell(v) for v in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        first, *rest = values
        return "  ".join([first.ljust(widths[0]), *(v.rjust(w) for v, w in zip(rest, widths[1:], strict=True))])

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(list(headers)), rule, *(line(r) for r in cells)])


def _git_revision() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).parent,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.strip() or None


def environment() -> dict[str, Any]:
    return {
        "time": datetime.now(UTC).isoformat(timespec="seconds"),
        "git_revision": _git_revision(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "database_url_given": bool(os.environ.get("DATABASE_URL")),
        "nats_url_given": bool(os.environ.get("NATS_URL")),
    }


def write_json(name: str, payload: dict[str, Any]) -> Path:
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    return path
