"""`cortex migrate` as a database user that lacks a privilege says which, in one line (QA 28: a 150-line
traceback for an owner that may not create the vector extension); an owner that is not a superuser, as on
a managed service, migrates (revision 0021)."""

import os
import subprocess
import uuid

import pytest
from sqlalchemy import text

from cortex_store.database import make_engine
from cortex_store.migrate import upgrade_async
from tests.cli_runs import CORTEX
from tests.infrastructure import Infrastructure
from tests.own_database import on_database, own_database, scalar

pytestmark = pytest.mark.e2e


PINNABLE = (
    "cortex_caller_access(text, text, text)",
    "cortex_document_prior(text, text, uuid, uuid, bigint, boolean)",
    "cortex_enter_ann(uuid, integer)",
    "cortex_index_document(text, text, jsonb, jsonb, uuid[], text[], text[], text[], real[], integer, text, text, "
    "text, bytea)",
)
PINNED_FUNCTIONS = """
SELECT count(*) FROM pg_proc p
WHERE EXISTS (SELECT 1 FROM unnest(p.proconfig) setting WHERE setting LIKE 'cortex.organization_id=%')
"""


async def run_as_superuser(infra: Infrastructure, *statements: str) -> None:
    await run_as_superuser_on(infra.database_url, *statements)


async def run_as_superuser_on(database_url: str, *statements: str) -> None:
    engine = make_engine(database_url, pool_size=1)
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


async def test_an_owner_that_is_not_a_superuser_migrates(migrated: Infrastructure) -> None:
    """A managed database's owner: it may create roles, the provider's admin role created the `vector`
    extension, and it is not a superuser. Before, revision 0011 failed: `permission denied to set parameter
    "cortex.organization_id"` (a function's SET clause for a setting no extension defines)."""
    name = f"owner_{uuid.uuid4().hex[:10]}"
    await run_as_superuser(
        migrated, f'CREATE ROLE "{name}" LOGIN CREATEROLE', f'CREATE DATABASE "{name}" OWNER "{name}"'
    )
    url = on_database(migrated.database_url, name)
    try:
        await run_as_superuser_on(url, "CREATE EXTENSION vector")
        env = {**os.environ, "DATABASE_URL": url.replace("://postgres@", f"://{name}@", 1)}
        done = subprocess.run([CORTEX, "migrate"], env=env, capture_output=True, text=True, timeout=300, check=False)
        pinned = await scalar(url, PINNED_FUNCTIONS)
    finally:
        await run_as_superuser(
            migrated, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)', f'DROP OWNED BY "{name}" CASCADE'
        )
        await run_as_superuser(migrated, f'DROP ROLE IF EXISTS "{name}"')

    assert done.returncode == 0, done.stdout + done.stderr
    assert pinned == 0


async def test_functions_that_pinned_the_setting_pin_it_no_more(migrated: Infrastructure) -> None:
    """A database migrated before revision 0021 (by a superuser) has the four functions with the clause."""
    async with own_database(migrated.database_url, "cx_unpin", "0020") as name:
        url = on_database(migrated.database_url, name)
        await run_as_superuser_on(
            url, *(f"ALTER FUNCTION {function} SET \"cortex.organization_id\" = ''" for function in PINNABLE)
        )
        assert await scalar(url, PINNED_FUNCTIONS) == 4
        await upgrade_async(url, "0021")
        assert await scalar(url, PINNED_FUNCTIONS) == 0
