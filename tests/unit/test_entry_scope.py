"""A memory entry's scope: a Work-tier entry names its Work, whether it comes as an event or a request."""

import uuid

import pytest
from pydantic import ValidationError

from cortex_contracts.memory import EntryRemembered


def remembered(**scope: str) -> dict[str, str]:
    return {
        "organizationId": str(uuid.uuid4()),
        "content": "x",
        "partition": "semantic",
    } | scope


def test_a_work_tier_entry_without_a_work_is_refused() -> None:
    with pytest.raises(ValidationError, match="tier `work` needs a workId"):
        EntryRemembered.model_validate(remembered(tier="work"))


def test_a_session_tier_entry_without_a_session_is_refused() -> None:
    """QA 39: stored, and found by no recall scoped to a session."""
    for blank in ({}, {"memorySessionId": ""}, {"memorySessionId": "  "}):
        with pytest.raises(ValidationError, match="tier `session` needs a memorySessionId"):
            EntryRemembered.model_validate(remembered(tier="session", **blank))


@pytest.mark.parametrize("tier", ["org", "global"])
def test_other_tiers_need_no_work_or_session(tier: str) -> None:
    entry = EntryRemembered.model_validate(remembered(tier=tier))
    assert (entry.work_id, entry.memory_session_id) == (None, None)


def test_a_work_tier_entry_names_its_work() -> None:
    work = uuid.uuid4()
    assert EntryRemembered.model_validate(remembered(tier="work", workId=str(work))).work_id == work


def test_an_entry_without_an_id_gets_the_one_its_scope_and_content_derive() -> None:
    entry = EntryRemembered.model_validate(remembered(tier="org"))
    same_memory = EntryRemembered.model_validate(
        remembered(tier="org") | {"organizationId": str(entry.organization_id)}
    )
    elsewhere = EntryRemembered.model_validate(
        remembered(tier="session", memorySessionId="s-1") | {"organizationId": str(entry.organization_id)}
    )

    assert entry.entry_id is None
    assert entry.id == same_memory.id != elsewhere.id


def test_an_entry_id_its_scope_and_content_do_not_derive_is_refused_naming_the_one_they_do() -> None:
    entry = EntryRemembered.model_validate(remembered(tier="org"))
    assert (
        EntryRemembered.model_validate(
            remembered(tier="org") | {"organizationId": str(entry.organization_id), "entryId": str(entry.id)}
        ).entry_id
        == entry.id
    )

    with pytest.raises(ValidationError, match=f"entryId should be {entry.id}, derived from this scope and content"):
        EntryRemembered.model_validate(
            remembered(tier="org") | {"organizationId": str(entry.organization_id), "entryId": str(uuid.uuid4())}
        )
