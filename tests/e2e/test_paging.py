"""Paging through the feed and through a search returns every document exactly once."""

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext

from tests.conftest import Org
from tests.events import IndexedWatcher, publish_upsert, upsert_event

pytestmark = pytest.mark.e2e

DOCUMENTS = 25


async def pages(client: httpx.AsyncClient, params: dict[str, Any]) -> list[list[str]]:
    """Follow nextCursor to the end; the ids of each page."""
    found: list[list[str]] = []
    cursor: str | None = None
    while True:
        response = await client.get("/api/memory", params={**params, **({"cursor": cursor} if cursor else {})})
        assert response.status_code == 200, response.text
        page = response.json()
        found.append([item["id"] for item in page["items"]])
        cursor = page.get("nextCursor")
        if cursor is None:
            return found
        assert len(found) <= DOCUMENTS, "the cursor never ends"


@pytest.fixture
async def documents(org: Org, js: JetStreamContext, nats_client: NATS) -> list[str]:
    """25 documents sharing the word 'capybara'; several share one updated-at, so ties must page right."""
    watcher = await IndexedWatcher().start(nats_client, org.id)
    base = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    ids = [uuid.uuid4() for _ in range(DOCUMENTS)]
    for i, document_id in enumerate(ids):
        updated = base + timedelta(minutes=i // 5)  # five documents per timestamp
        event = upsert_event(
            org.id,
            document_id,
            title=f"Capybara report {i}",
            body=f"Capybara sighting number {i} near the river.",
            version=1,
            updatedAt=updated.isoformat(),
        )
        await publish_upsert(js, event)
    for document_id in ids:
        await watcher.wait_for(document_id, 1)
    await watcher.stop()
    return [str(document_id) for document_id in ids]


async def test_the_feed_pages_through_every_document_once(org: Org, documents: list[str]) -> None:
    found = await pages(org.member, {"limit": 10})

    assert [len(page) for page in found] == [10, 10, 5]
    flat = [document_id for page in found for document_id in page]
    assert sorted(flat) == sorted(documents)
    # newest first: the last five published carry the latest timestamp
    assert set(flat[:5]) == set(documents[-5:])


async def test_a_search_pages_through_every_match_once(org: Org, documents: list[str]) -> None:
    found = await pages(org.member, {"limit": 10, "q": "capybara sighting"})

    assert [len(page) for page in found] == [10, 10, 5]
    assert sorted(document_id for page in found for document_id in page) == sorted(documents)


async def test_a_cursor_holds_for_the_same_query_however_it_is_spelled(org: Org, documents: list[str]) -> None:
    """Before: the next page was refused as "another query" when the filters came in another order, when a
    sort or mode that a feed without q ignores changed, or when the default sort was named (QA 43)."""
    expected = await pages(org.member, {"limit": 10, "status": "published"})
    searched = await pages(org.member, {"limit": 10, "q": "capybara sighting"})
    spellings = [
        (
            [("status", "published"), ("status", "failed"), ("sort", "updated"), ("mode", "semantic")],
            [("status", "failed"), ("status", "published")],
            expected,
        ),
        (
            [("q", "capybara sighting")],
            [("q", "capybara sighting"), ("sort", "relevance"), ("mode", "hybrid")],
            searched,
        ),
    ]
    for first_page, next_page, pages_expected in spellings:
        first = await org.member.get("/api/memory", params=[("limit", 10), *first_page])
        assert first.status_code == 200, first.text
        cursor = first.json()["nextCursor"]
        following = await org.member.get("/api/memory", params=[("limit", 10), *next_page, ("cursor", cursor)])
        assert following.status_code == 200, following.text
        assert [item["id"] for item in following.json()["items"]] == pages_expected[1]


MANY = 120
WORDS = [
    "river",
    "forest",
    "meadow",
    "harbor",
    "canyon",
    "glacier",
    "desert",
    "island",
    "valley",
    "summit",
    "marsh",
    "delta",
]


@pytest.fixture
async def many(org: Org, js: JetStreamContext, nats_client: NATS) -> list[str]:
    """120 documents that all match 'capybara', each with other words: the legs rank them differently."""
    watcher = await IndexedWatcher().start(nats_client, org.id)
    base = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    ids = [uuid.uuid4() for _ in range(MANY)]
    for i, document_id in enumerate(ids):
        words = " ".join(WORDS[(i * k) % len(WORDS)] for k in (1, 3, 7))
        body = f"Capybara {'capybara ' * (i % 4)}seen by the {words} on day {i}."
        event = upsert_event(
            org.id,
            document_id,
            title=f"Field note {i}",
            body=body,
            version=1,
            updatedAt=(base + timedelta(minutes=i)).isoformat(),
        )
        await publish_upsert(js, event)
    for document_id in ids:
        await watcher.wait_for(document_id, 1)
    await watcher.stop()
    return [str(document_id) for document_id in ids]


async def items_of(client: httpx.AsyncClient, params: dict[str, Any]) -> list[dict[str, Any]]:
    """Every item of every page, following nextCursor."""
    found: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        response = await client.get("/api/memory", params={**params, **({"cursor": cursor} if cursor else {})})
        assert response.status_code == 200, response.text
        found.extend(response.json()["items"])
        cursor = response.json().get("nextCursor")
        if cursor is None:
            return found
        assert len(found) <= 2 * MANY, "the cursor never ends"


async def test_a_hybrid_searchs_pages_are_slices_of_one_ranking(org: Org, many: list[str]) -> None:
    """Before (QA 30): each page fused legs cut at the depth it needed, a ranking of its own; over 120
    matches, pages of 10 repeated 13 documents and never showed 20."""
    found = await items_of(org.member, {"q": "capybara river", "limit": 10})
    first = (await org.member.get("/api/memory", params={"q": "capybara river", "limit": 10})).json()["items"]

    ids = [item["id"] for item in found]
    assert len(ids) == len(set(ids)), "a document on two pages"
    assert len(ids) >= 50  # each leg's best 50, fused
    scores = [item["score"] for item in found]
    assert scores == sorted(scores, reverse=True)
    assert ids[:10] == [item["id"] for item in first]


async def test_a_search_newest_first_pages_once_through_its_ranking(org: Org, many: list[str]) -> None:
    found = await items_of(org.member, {"q": "capybara river", "limit": 10, "sort": "updated"})

    ids = [item["id"] for item in found]
    assert len(ids) == len(set(ids)), "a document on two pages"
    assert len(ids) >= 50
    updated = [item["updatedAt"] for item in found]
    assert updated == sorted(updated, reverse=True)
