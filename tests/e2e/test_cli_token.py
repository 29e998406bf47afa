"""`cortex token`: an existing member keeps their role unless --role with --create changes it, which is said;
--role without --create must match the role they have (before: silently ignored, or silently changed)."""

import uuid
from pathlib import Path

import pytest

from cortex_cli.organizations import current_role
from cortex_store.models import MemberRole
from tests.cli_runs import cli
from tests.infrastructure import Infrastructure

pytestmark = pytest.mark.e2e


async def test_a_role_changes_only_when_asked_and_the_change_is_said(
    migrated: Infrastructure, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CORTEX_DATA_DIR", str(tmp_path))  # where the token secret is kept
    org = f"tok-{uuid.uuid4().hex[:8]}"

    assert await cli(migrated, ["token", "--org", org, "--user", "bob", "--role", "admin", "--create"]) == 0
    assert await cli(migrated, ["token", "--org", org, "--user", "bob", "--create"]) == 0  # no --role: kept
    assert await current_role(migrated.database_url, org, "bob") is MemberRole.ADMIN
    capsys.readouterr()

    assert await cli(migrated, ["token", "--org", org, "--user", "bob", "--role", "member"]) == 2
    assert capsys.readouterr().err.strip() == f"error: bob is admin in {org}; give --create to make them member"
    assert await current_role(migrated.database_url, org, "bob") is MemberRole.ADMIN

    assert await cli(migrated, ["token", "--org", org, "--user", "bob", "--role", "member", "--create"]) == 0
    said = capsys.readouterr()
    assert said.err.strip() == f"bob was admin in {org}, now member"
    assert said.out.strip()  # the token
    assert await current_role(migrated.database_url, org, "bob") is MemberRole.MEMBER
