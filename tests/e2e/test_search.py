"""Documents published as KB events become searchable through the HTTP API."""

import unicodedata
import uuid

import pytest
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext

from tests.conftest import Org
from tests.events import IndexedWatcher, publish_upsert, search_ids, upsert_event

pytestmark = pytest.mark.e2e


async def test_published_documents_become_searchable_best_first(
    org: Org, js: JetStreamContext, nats_client: NATS
) -> None:
    watcher = await IndexedWatcher().start(nats_client, org.id)
    pricing, onboarding = uuid.uuid4(), uuid.uuid4()
    await publish_upsert(
        js,
        upsert_event(
            org.id,
            pricing,
            title="Pricing",
            version=1,
            body="# Pricing\n\nOur pricing has three tiers. Enterprise pricing is negotiated per seat.",
        ),
    )
    await publish_upsert(
        js,
        upsert_event(
            org.id,
            onboarding,
            title="Onboarding",
            version=1,
            body="# Onboarding\n\nNew engineers get a laptop and a buddy on day one.",
        ),
    )
    indexed = await watcher.wait_for(pricing, 1)
    await watcher.wait_for(onboarding, 1)
    await watcher.stop()
    assert indexed["chunks"] >= 1

    assert (await search_ids(org.member, "pricing"))[0] == str(pricing)
    assert (await search_ids(org.member, "laptop for new engineers"))[0] == str(onboarding)
    assert set(await search_ids(org.member)) == {str(pricing), str(onboarding)}


async def _lexical_ids(org: Org, q: str) -> list[str]:
    response = await org.member.get("/api/memory", params={"q": q, "mode": "lexical", "limit": 10})
    assert response.status_code == 200, response.text
    return [item["id"] for item in response.json()["items"]]


async def _publish_all(
    js: JetStreamContext, nats_client: NATS, org: Org, docs: dict[uuid.UUID, tuple[str, str]]
) -> None:
    watcher = await IndexedWatcher().start(nats_client, org.id)
    for doc_id, (title, body) in docs.items():
        await publish_upsert(js, upsert_event(org.id, doc_id, title=title, body=body, version=1))
    for doc_id in docs:
        await watcher.wait_for(doc_id, 1)
    await watcher.stop()


FILLER = "harbour lantern meadow quarry orchard violin glacier canyon"


async def test_bm25_normalizes_document_length(org: Org, js: JetStreamContext, nats_client: NATS) -> None:
    """BM25 with b = 0.75: a short note naming the word once outranks a long text naming it twice.

    Tokens (title included): short 3 (zebra once, in its title), long 61 (zebra twice), two others 31
    each → avgdl 31.5. Score per unit idf, k1 = 1.5: short 2.5 / (1 + 1.5 (0.25 + 0.75 · 3 / 31.5)) =
    1.68; long 5 / (2 + 1.5 (0.25 + 0.75 · 61 / 31.5)) = 1.09. Without length normalization (b = 0) the
    long text would win (1.43 vs 1.00).
    """
    short, long, other_a, other_b = uuid.uuid4(), uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    await _publish_all(
        js,
        nats_client,
        org,
        {
            short: ("Zebra", "grazing herd"),
            long: ("Savanna", " ".join(["zebra", *(FILLER.split() * 7), "zebra", "buffalo", "antelope"])),
            other_a: ("Quiet", " ".join((FILLER.split() * 4)[:30])),
            other_b: ("Still", " ".join((FILLER.split() * 4)[:30])),
        },
    )
    assert (await _lexical_ids(org, "zebra"))[:2] == [str(short), str(long)]


async def test_bm25_counts_repeated_query_words(org: Org, js: JetStreamContext, nats_client: NATS) -> None:
    """A word the question repeats weighs as often as it is repeated (as in bm25s and Lucene).

    Both words occur in one document each (same idf). Per unit idf: the apple text (12 tokens) scores
    0.87, the shorter banana note (4 tokens) 1.33, avgdl 9 — so counted once each, banana would win;
    asked twice, apple scores 1.74 and wins.
    """
    apple, banana, other_a, other_b = uuid.uuid4(), uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    await _publish_all(
        js,
        nats_client,
        org,
        {
            apple: ("Fruit", "apple " + " ".join([*FILLER.split(), "river", "forest"])),
            banana: ("Snack", "banana split ripe"),
            other_a: ("Quiet", " ".join([*FILLER.split(), "river"])),
            other_b: ("Still", " ".join([*FILLER.split(), "forest"])),
        },
    )
    assert (await _lexical_ids(org, "banana apple"))[:2] == [str(banana), str(apple)]
    assert (await _lexical_ids(org, "apple banana apple"))[:2] == [str(apple), str(banana)]


def heading_corpus() -> dict[str, tuple[str, str]]:
    """A 12-passage handbook with `zebra` only in its title, a short note naming it once in its text,
    and two plain documents."""
    words = FILLER.split()
    paragraph = " ".join((words * 19)[:150])
    return {
        "handbook": ("Zebra handbook", "\n\n".join([paragraph] * 12)),
        "note": ("Sighting", " ".join(["zebra", *(words * 8)[:59]])),
        "plain_a": ("Quiet", " ".join((words * 8)[:60])),
        "plain_b": ("Still", " ".join((words * 8)[:60])),
    }


async def test_bm25_counts_a_title_once_however_many_passages_repeat_it(
    org: Org, js: JetStreamContext, nats_client: NATS
) -> None:
    """Every passage carries its heading path, but BM25 counts the title once per document.

    Tokens: handbook 1,912 (12 passages of 150 words, 10 of each repeated as overlap, title 2), the others
    61 each → avgdl 524. Per unit idf, k1 = 1.5, b = 0.75: the note scores 2.5 / (1 + 1.5 (0.25 + 0.75 ·
    61 / 524)) = 1.66; the handbook, its title counted once, 2.5 / (1 + 1.5 (0.25 + 0.75 · 1912 / 524)) =
    0.46. Counted once per passage (tf 12, 1,934 tokens) the handbook would score 1.82 and come first.
    """
    ids = {name: uuid.uuid4() for name in heading_corpus()}
    await _publish_all(js, nats_client, org, {ids[name]: doc for name, doc in heading_corpus().items()})
    assert (await _lexical_ids(org, "zebra"))[:2] == [str(ids["note"]), str(ids["handbook"])]


@pytest.mark.parametrize("mode", ["hybrid", "lexical", "semantic"])
async def test_a_snippet_shows_the_query_word_far_into_its_passage(org: Org, mode: str) -> None:
    """Before: the snippet was the passage's first 280 characters, which a word further on is not in (QA 32)."""
    word = f"okapi{uuid.uuid4().hex[:8]}"
    lead = " ".join(["The savanna survey lists many grazing animals by region and by season."] * 6)
    body = f"{lead} The {word} was seen at the river at dusk. {lead}"
    created = await org.admin.post(
        "/api/memory/documents", params={"wait": "true"}, json={"title": "Survey", "body": body}
    )
    assert created.status_code == 201, created.text

    # With words the passage is about, so that the dense leg finds it near enough too.
    found = await org.member.get("/api/memory", params={"q": f"{word} among grazing animals", "mode": mode})

    (item,) = [item for item in found.json()["items"] if item["id"] == created.json()["id"]]
    assert f"The {word} was seen at the river at dusk." in item["snippet"]
    assert item["snippet"].startswith("…")


async def test_words_match_however_their_accents_were_typed(org: Org, js: JetStreamContext, nats_client: NATS) -> None:
    """Before: a document typed with combining accents (NFD, as macOS file names and some editors write)
    was not found by the same word typed with precomposed letters, nor the other way round (QA 43)."""
    composed, decomposed = uuid.uuid4(), uuid.uuid4()
    await _publish_all(
        js,
        nats_client,
        org,
        {
            composed: ("Menu", "Le café crème du matin"),
            decomposed: ("Carte", unicodedata.normalize("NFD", "Un naïve soupçon de cannelle")),
        },
    )

    assert await _lexical_ids(org, "café crème") == [str(composed)]
    assert await _lexical_ids(org, unicodedata.normalize("NFD", "café crème")) == [str(composed)]
    assert await _lexical_ids(org, "naïve soupçon") == [str(decomposed)]


async def test_a_search_answers_only_what_is_near_enough_to_the_query(
    org: Org, js: JetStreamContext, nats_client: NATS
) -> None:
    """The dense leg's nearest passages count only from a similarity up (CORTEX_AGGREGATOR_DENSE_MIN_SIMILARITY).
    Before (QA 47): a word no document has answered every document, and sorted by date the one document with
    the word came after all the newer ones."""
    postmortem = uuid.uuid4()
    await _publish_all(
        js,
        nats_client,
        org,
        {postmortem: ("Postmortem 4471", "The gryphon job filled the disk of the build host at night.")},
    )
    newer = {
        uuid.uuid4(): ("Onboarding", "New engineers get a laptop and a buddy on their first day."),
        uuid.uuid4(): ("Vacation policy", "Every employee takes at least two weeks off each year."),
        uuid.uuid4(): ("Pricing", "Enterprise pricing is negotiated per seat, with three tiers."),
        uuid.uuid4(): ("Office plants", "The plants on the third floor are watered on Mondays."),
    }
    await _publish_all(js, nats_client, org, newer)

    by_date = await org.member.get("/api/memory", params={"q": "gryphon", "sort": "updated"})
    nonsense = await org.member.get("/api/memory", params={"q": "xyzzyplugh"})

    assert [item["id"] for item in by_date.json()["items"]] == [str(postmortem)]
    assert nonsense.json()["items"] == []
