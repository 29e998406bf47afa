"""`cortex migrate` as a database user that lacks a privilege says which, in one line (QA 28: a 150-line
traceback for an owner that may not create the vector extension)."""

import os
import subprocess
import uuid

import pytest
from sqlalchemy import text

from cortex_store.database import make_engine
from tests.cli_runs import CORTEX
from tests.infrastructure import Infrastructure
from tests.own_database import on_database

pytestmark = pytest.mark.e2e


async def run_as_superuser(infra: Infrastructure, *statements: str) -> None:
    engine = make_engine(infra.database_url, pool_size=1)
    try:
        async with engine.connect() as connection:
            await connection.execution_options(isolation_level="AUTOCOMMIT")
            for statement in statements:
                await connection.execute(text(statement))
    finally:
        await engine.dispose()


async def test_an_owner_that_may_not_create_the_vector_extension_is_told_so(migrated: Infrastructure) -> None:
    name = f"weak_{uuid.uuid4().hex[:10]}"
    await run_as_superuser(migrated, f'CREATE ROLE "{name}" LOGIN', f'CREATE DATABASE "{name}" OWNER "{name}"')
    try:
        url = on_database(migrated.database_url, name)
        weak_url = url.replace("://postgres@", f"://{name}@", 1)
        assert weak_url != url, url
        env = {**os.environ, "DATABASE_URL": weak_url}
        done = subprocess.run([CORTEX, "migrate"], env=env, capture_output=True, text=True, timeout=120, check=False)
    finally:
        await run_as_superuser(
            migrated, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)', f'DROP ROLE IF EXISTS "{name}"'
        )

    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.startswith("error: the database user lacks a privilege the migrations need: permission denied")
    assert "vector" in done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
