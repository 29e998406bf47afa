"""The `cortex` command run in this process as a user runs it, pointed at the test servers; or, where its
process matters (its output, how it ends), run as a process of its own."""

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cortex_cli.main import main
from tests.infrastructure import Infrastructure

CORTEX = str(Path(sys.executable).with_name("cortex"))


async def cli(migrated: Infrastructure, argv: list[str]) -> int:
    """`cortex ARGV`'s exit code (it calls asyncio.run, so it runs off this loop); its output goes to capsys."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DATABASE_URL", migrated.database_url)
        patch.setenv("NATS_URL", migrated.nats_url)
        return await asyncio.to_thread(main, argv)


async def cli_process(
    migrated: Infrastructure, data_dir: Path, argv: list[str], **run: Any
) -> subprocess.CompletedProcess[str]:
    """`cortex ARGV` as a process (off this loop, where the services run); output captured unless `run` says."""
    environment = {
        **os.environ,
        "CORTEX_DATA_DIR": str(data_dir),
        "DATABASE_URL": migrated.database_url,
        "NATS_URL": migrated.nats_url,
    }
    options: dict[str, Any] = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "timeout": 60} | run

    def process() -> subprocess.CompletedProcess[str]:
        return subprocess.run([CORTEX, *argv], env=environment, text=True, check=False, **options)

    return await asyncio.to_thread(process)
