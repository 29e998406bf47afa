"""`memory.<orgId>.entry.remembered` events: the entry's id derives from its scope and content, so the same
memory is one entry however it arrives; an event may leave the id out, and one that names another is
dead-lettered. Before, the indexer took any `entryId`: the same memory published twice under two ids was
two entries, recalled twice, and a reused id in another scope was acknowledged and stored nowhere.
"""

import asyncio
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from nats.js import JetStreamContext

from cortex_contracts import subjects
from cortex_contracts.memory import MAX_ENTRY_CHARS, MemoryPartition
from cortex_gateway.auth import Caller
from cortex_gateway.routes.entries import EntryCreate, entry_id
from cortex_messaging.publisher import publish_event
from cortex_store.models import MemberRole
from tests.conftest import OrgFactory
from tests.dlq import read_dead_letters
from tests.events import publish_remembered, remembered_event

pytestmark = pytest.mark.e2e


async def remember(js: JetStreamContext, org_id: uuid.UUID, content: str, **extra: Any) -> None:
    await publish_remembered(js, remembered_event(org_id, content, partition=MemoryPartition.SEMANTIC, **extra))


async def remember_as_sent(js: JetStreamContext, org_id: uuid.UUID, content: str, **data: Any) -> None:
    """As a publisher that sets fields the contract model would refuse to build: its own `entryId`."""
    event = remembered_event(org_id, content, partition=MemoryPartition.SEMANTIC)
    await publish_remembered(js, event.model_copy(update={"data": event.data | data}))


async def remembered_by_api(org: Any, content: str, **scope: str) -> uuid.UUID:
    body = {"content": content, "partition": "semantic", "tier": "org"} | scope
    response = await org.member.post("/api/memory/entries", params={"wait": "true"}, json=body)
    assert response.status_code in (200, 201), response.text
    return uuid.UUID(response.json()["id"])


async def test_the_same_memory_published_twice_and_posted_is_one_entry(
    make_org: OrgFactory, js: JetStreamContext
) -> None:
    org = await make_org()
    content = "The walrus moults once a year."

    await remember(js, org.id, content)
    await remember(js, org.id, content)
    await recalled_eventually(org, "walrus moults", content)
    response = await org.member.post(
        "/api/memory/entries",
        params={"wait": "true"},
        json={"content": content, "partition": "semantic", "tier": "org"},
    )

    assert (response.status_code, response.json()["deduplicated"]) == (200, True)
    recalled = await org.member.get("/api/memory/recall", params={"q": "walrus moults"})
    assert [item["id"] for item in recalled.json()["items"]] == [response.json()["id"]]


async def test_an_entry_id_not_derived_from_scope_and_content_is_dead_lettered(
    make_org: OrgFactory, js: JetStreamContext
) -> None:
    org = await make_org()
    taken = await remembered_by_api(org, "The deploy freeze starts on Fridays at noon.")
    session_scope = {"tier": "session", "memorySessionId": "s-1"}
    in_its_session = await remembered_by_api(org, "The deploy freeze starts on Fridays at noon.", **session_scope)

    await remember_as_sent(js, org.id, "The deploy freeze starts on Fridays at noon.", entryId=str(taken))  # the same
    await remember_as_sent(js, org.id, "Something else entirely.", entryId=str(taken))
    await remember_as_sent(js, org.id, "A random id.", entryId=str(uuid.uuid4()))
    await remember_as_sent(
        js, org.id, "The deploy freeze starts on Fridays at noon.", entryId=str(taken), **session_scope
    )

    letters = await read_dead_letters(js, org.id, 3, stream="memory")
    errors = sorted(letter.record["error"] for letter in letters)
    assert all("derived from this scope and content (or left out), not" in error for error in errors), errors
    assert sum(str(in_its_session) in error for error in errors) == 1  # the letter names the id it would have
    stats = await org.member.get("/api/memory/stats")
    assert stats.json()["memoryEntries"] == 2  # the two remembered through the API, no other
    in_session = await org.member.get("/api/memory/recall", params={"q": "deploy freeze Fridays", "sessionId": "s-1"})
    assert [item["id"] for item in in_session.json()["items"]] == [str(in_its_session)]


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
    # is about to take. Each is refused for what it is (not its content's id), whatever the other holds.
    await remember_as_sent(js, mine.id, "Probing for their staging schedule.", entryId=str(held))
    await remember_as_sent(js, theirs.id, "Claimed before they remember it.", entryId=str(predicted))

    for org, unlike in ((mine, held), (theirs, predicted)):
        (letter,) = await read_dead_letters(js, org.id, 1, stream="memory")
        assert letter.record["error"].endswith(f"derived from this scope and content (or left out), not {unlike}")
    assert await remembered_by_api(mine, upcoming) == predicted
    await recalled_eventually(theirs, "staging cluster Monday", "The staging cluster is rebuilt every Monday.")


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

    await remember_as_sent(js, org.id, "When was this?", rememberedAt=remembered_at)

    (letter,) = await read_dead_letters(js, org.id, 1, stream="memory")
    assert "rememberedAt" in letter.record["error"]


async def test_an_event_time_out_of_bounds_is_dead_lettered(make_org: OrgFactory, js: JetStreamContext) -> None:
    """Without `rememberedAt` the event's time is when the entry was remembered. Before: year 1 was stored as
    `-infinity` and recalled as `0001-01-01T00:00:00` (no zone), and year 9999 as it came."""
    org = await make_org()
    event = remembered_event(org.id, "When was this?", partition=MemoryPartition.SEMANTIC)

    for time in (datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 12, 31, tzinfo=UTC)):
        await publish_remembered(js, event.model_copy(update={"time": time, "id": str(uuid.uuid4())}))

    letters = await read_dead_letters(js, org.id, 2, stream="memory")
    assert sorted(letter.record["error"].split(" is ")[1][:6] for letter in letters) == ["ahead ", "before"]


async def test_an_entry_of_only_invisible_characters_is_dead_lettered(
    make_org: OrgFactory, js: JetStreamContext
) -> None:
    org = await make_org()

    event = remembered_event(org.id, "placeholder", partition=MemoryPartition.SEMANTIC)
    blank = event.model_copy(update={"data": {**event.data, "content": "\u200b\u200b"}})  # as a publisher sends it

    await publish_remembered(js, blank)  # before: stored, and recalled first for anything

    (letter,) = await read_dead_letters(js, org.id, 1, stream="memory")
    assert "content must not be blank" in letter.record["error"]


async def test_fields_in_snake_case_are_refused_over_http_and_dead_lettered_as_events(
    make_org: OrgFactory, js: JetStreamContext
) -> None:
    """The contract's names are camelCase; `memory_session_id` was taken as `memorySessionId` by both paths."""
    org = await make_org()
    response = await org.member.post("/api/memory/entries", json={"content": "Snake", "memory_session_id": "s-1"})
    assert response.status_code == 422, response.text
    assert [error["loc"] for error in response.json()["errors"]] == [["body", "memory_session_id"]]

    event = remembered_event(org.id, "Snake case event", partition=MemoryPartition.SEMANTIC)
    data = {("organization_id" if key == "organizationId" else key): value for key, value in event.data.items()}
    await publish_remembered(js, event.model_copy(update={"data": data}))

    (letter,) = await read_dead_letters(js, org.id, 1, stream="memory")
    assert "organizationId" in letter.record["error"]


async def test_events_on_memory_subjects_no_handler_knows_are_dead_lettered(
    make_org: OrgFactory, js: JetStreamContext
) -> None:
    """QA 41: the MEMORY stream takes `memory.>` but the indexer read only `memory.*.entry.remembered`: an
    event on any other subject (a publisher's typo, an action not built) was acknowledged and lost."""
    org = await make_org()
    event = remembered_event(org.id, "Typo in the subject", partition=MemoryPartition.SEMANTIC)
    forgotten = event.model_copy(update={"type": "memory.entry.forgotten", "id": str(uuid.uuid4())})

    await publish_event(js, f"{subjects.memory_entry_remembered(org.id)}.v2", event)
    await publish_event(js, f"memory.{org.id}.entry.forgotten", forgotten)

    letters = await read_dead_letters(js, org.id, 2, stream="memory")
    assert sorted(letter.record["error"] for letter in letters) == [
        f"event type 'memory.entry.remembered' does not match its subject 'memory.{org.id}.entry.remembered.v2'",
        f"unknown event 'entry.forgotten' on memory.{org.id}.entry.forgotten",
    ]


async def test_content_that_grows_past_the_limit_in_nfc_is_refused_by_both_paths(
    make_org: OrgFactory, js: JetStreamContext
) -> None:
    """QA 41: the limit was checked before NFC. U+0958 is two characters in NFC: 4,097 of them (8,194 stored)
    answered 500 over HTTP, and 8,192 of them as an event were stored at 16,384 characters."""
    org = await make_org()
    grows = "\u0958" * (MAX_ENTRY_CHARS // 2 + 1)
    response = await org.member.post("/api/memory/entries", json={"content": grows, "tier": "org"})
    assert response.status_code == 422, response.text
    assert "over 8192 characters in Unicode NFC" in response.json()["errors"][0]["msg"]

    event = remembered_event(org.id, "placeholder", partition=MemoryPartition.SEMANTIC)
    await publish_remembered(js, event.model_copy(update={"data": {**event.data, "content": grows}}))
    (letter,) = await read_dead_letters(js, org.id, 1, stream="memory")
    assert "over 8192 characters in Unicode NFC" in letter.record["error"]

    fits = "\u0958" * (MAX_ENTRY_CHARS // 2)  # 8,192 in NFC: still taken
    response = await org.member.post("/api/memory/entries", params={"wait": "true"}, json={"content": fits})
    assert response.status_code == 201, response.text
