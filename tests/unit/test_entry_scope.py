"""A memory entry's scope: a Work-tier entry names its Work, whether it comes as an event or a request."""

import uuid

import pytest
from pydantic import ValidationError

from cortex_contracts.memory import EntryRemembered


def remembered(**scope: str) -> dict[str, str]:
    return {
        "entryId": str(uuid.uuid4()),
        "organizationId": str(uuid.uuid4()),
        "content": "x",
        "partition": "semantic",
    } | scope


def test_a_work_tier_entry_without_a_work_is_refused() -> None:
    with pytest.raises(ValidationError, match="tier `work` needs a workId"):
        EntryRemembered.model_validate(remembered(tier="work"))


@pytest.mark.parametrize("tier", ["session", "org", "global"])
def test_other_tiers_need_no_work(tier: str) -> None:
    assert EntryRemembered.model_validate(remembered(tier=tier)).work_id is None


def test_a_work_tier_entry_names_its_work() -> None:
    work = uuid.uuid4()
    assert EntryRemembered.model_validate(remembered(tier="work", workId=str(work))).work_id == work
