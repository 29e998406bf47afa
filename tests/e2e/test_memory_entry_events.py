"""`memory.<orgId>.entry.remembered` events whose entry id is taken, or whose time is out of bounds.

An entry's id derives from its scope and content, so the same memory remembered twice is stored once.
A publisher that chose its own ids could reuse one: the entry was acknowledged, logged as remembered,
and stored nowhere. Now a reused id with other content (or another organization's id) is dead-lettered.
"""

import uuid
from typing import Any

import pytest
from nats.js import JetStreamContext

from cortex_contracts.memory import MemoryPartition
from tests.conftest import OrgFactory
from tests.dlq import read_dead_letters
from tests.events import publish_remembered, remembered_event

pytestmark = pytest.mark.e2e


async def remember(js: JetStreamContext, org_id: uuid.UUID, entry_id: uuid.UUID, content: str, **extra: Any) -> None:
    event = remembered_event(org_id, entry_id, content, partition=MemoryPartition.SEMANTIC, **extra)
    await publish_remembered(js, event)


async def remembered_by_api(org: Any, content: str) -> uuid.UUID:
    body = {"content": content, "partition": "semantic", "tier": "org"}
    response = await org.member.post("/api/memory/entries", params={"wait": "true"}, json=body)
    assert response.status_code == 201, response.text
    return uuid.UUID(response.json()["id"])


async def test_an_entry_id_reused_for_other_content_or_by_another_organization_is_dead_lettered(
    make_org: OrgFactory, js: JetStreamContext
) -> None:
    mine, theirs = await make_org(), await make_org()
    taken = await remembered_by_api(mine, "The deploy freeze starts on Fridays at noon.")

    await remember(js, mine.id, taken, "The deploy freeze starts on Fridays at noon.")  # the same: deduplicated
    await remember(js, mine.id, taken, "Something else entirely.")
    await remember(js, theirs.id, taken, "Another organization's entry under that id.")

    (mine_letter,) = await read_dead_letters(js, mine.id, 1, stream="memory")
    (their_letter,) = await read_dead_letters(js, theirs.id, 1, stream="memory")
    for letter in (mine_letter, their_letter):
        assert f"entryId {taken} already names another entry" in letter.record["error"]
    recalled = await mine.member.get("/api/memory/recall", params={"q": "deploy freeze Fridays"})
    assert [item["id"] for item in recalled.json()["items"]] == [str(taken)]


@pytest.mark.parametrize("remembered_at", ["0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z"])
async def test_a_remembered_at_out_of_bounds_is_dead_lettered(
    remembered_at: str, make_org: OrgFactory, js: JetStreamContext
) -> None:
    org = await make_org()

    await remember(js, org.id, uuid.uuid4(), "When was this?", remembered_at=remembered_at)

    (letter,) = await read_dead_letters(js, org.id, 1, stream="memory")
    assert "rememberedAt" in letter.record["error"]
