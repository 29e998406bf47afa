"""`memory.<orgId>.entry.remembered` events whose entry id is taken, or whose time is out of bounds.

An entry's id derives from its scope and content, so the same memory remembered twice is stored once.
A publisher that chose its own ids could reuse one: the entry was acknowledged, logged as remembered,
and stored nowhere. Now a reused id with other content is dead-lettered. Each organization's ids are its
own: another organization's event under the same id is stored there, and tells it nothing.
"""

import asyncio
import uuid
from typing import Any

import pytest
from nats.js import JetStreamContext

from cortex_contracts.memory import MemoryPartition
from cortex_gateway.auth import Caller
from cortex_gateway.routes.entries import EntryCreate, entry_id
from cortex_store.models import MemberRole
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


async def test_an_entry_id_reused_for_other_content_is_dead_lettered(
    make_org: OrgFactory, js: JetStreamContext
) -> None:
    mine = await make_org()
    taken = await remembered_by_api(mine, "The deploy freeze starts on Fridays at noon.")

    await remember(js, mine.id, taken, "The deploy freeze starts on Fridays at noon.")  # the same: deduplicated
    await remember(js, mine.id, taken, "Something else entirely.")

    (letter,) = await read_dead_letters(js, mine.id, 1, stream="memory")
    assert f"entryId {taken} already names another entry" in letter.record["error"]
    recalled = await mine.member.get("/api/memory/recall", params={"q": "deploy freeze Fridays"})
    assert [item["id"] for item in recalled.json()["items"]] == [str(taken)]


async def test_another_organization_cannot_take_or_probe_an_entry_id(
    make_org: OrgFactory, js: JetStreamContext
) -> None:
    mine, theirs = await make_org(), await make_org()
    held = await remembered_by_api(theirs, "The staging cluster is rebuilt every Monday.")
    upcoming = "Our release train leaves on Tuesdays."
    predicted = entry_id(
        Caller("someone", mine.id, None, MemberRole.MEMBER),
        EntryCreate.model_validate({"content": upcoming, "partition": "semantic", "tier": "org"}),
    )

    # They publish, on their own subject, under ids they can predict: one this organization holds, one it
    # is about to take. Before, the first was dead-lettered ("already names another entry": an answer to
    # "do you hold this memory?") and the second blocked this organization's entry for good (504).
    await remember(js, mine.id, held, "Probing for their staging schedule.")
    await remember(js, theirs.id, predicted, "Claimed before they remember it.")
    await recalled_eventually(theirs, "claimed before", "Claimed before they remember it.")

    assert await remembered_by_api(mine, upcoming) == predicted
    for org, q, expected in (
        (mine, "release train Tuesdays", upcoming),
        (mine, "staging schedule", "Probing for their staging schedule."),
        (theirs, "staging cluster Monday", "The staging cluster is rebuilt every Monday."),
    ):
        await recalled_eventually(org, q, expected)
    assert await read_dead_letters(js, mine.id, 0, stream="memory") == []


async def recalled_eventually(org: Any, q: str, content: str) -> None:
    """Entries published as events are stored when the indexer gets to them."""
    async with asyncio.timeout(15):
        while True:
            recalled = await org.member.get("/api/memory/recall", params={"q": q})
            if content in [item["content"] for item in recalled.json()["items"]]:
                return
            await asyncio.sleep(0.2)


@pytest.mark.parametrize("remembered_at", ["0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z"])
async def test_a_remembered_at_out_of_bounds_is_dead_lettered(
    remembered_at: str, make_org: OrgFactory, js: JetStreamContext
) -> None:
    org = await make_org()

    await remember(js, org.id, uuid.uuid4(), "When was this?", remembered_at=remembered_at)

    (letter,) = await read_dead_letters(js, org.id, 1, stream="memory")
    assert "rememberedAt" in letter.record["error"]


async def test_an_entry_of_only_invisible_characters_is_dead_lettered(
    make_org: OrgFactory, js: JetStreamContext
) -> None:
    org = await make_org()

    event = remembered_event(org.id, uuid.uuid4(), "placeholder", partition=MemoryPartition.SEMANTIC)
    blank = event.model_copy(update={"data": {**event.data, "content": "\u200b\u200b"}})  # as a publisher sends it

    await publish_remembered(js, blank)  # before: stored, and recalled first for anything

    (letter,) = await read_dead_letters(js, org.id, 1, stream="memory")
    assert "content must not be blank" in letter.record["error"]
