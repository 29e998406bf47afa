"""The `cortex` command run in this process as a user runs it, pointed at the test servers."""

import asyncio

import pytest

from cortex_cli.main import main
from tests.infrastructure import Infrastructure


async def cli(migrated: Infrastructure, argv: list[str]) -> int:
    """`cortex ARGV`'s exit code (it calls asyncio.run, so it runs off this loop); its output goes to capsys."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DATABASE_URL", migrated.database_url)
        patch.setenv("NATS_URL", migrated.nats_url)
        return await asyncio.to_thread(main, argv)
