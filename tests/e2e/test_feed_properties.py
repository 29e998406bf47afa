"""Property-based tests of the org feed and its facets, against a ground-truth model of the data.

One data set per module (publishing and indexing it is the slow part): organization A with 3 Missions,
6 Works (two without a Mission), 2 Teams (one Work owned by both) and 40 documents with random classes,
tags, statuses, sources and Works; organization B with overlapping values, some of its own, and
documents that even name A's Work ids. Everything goes through NATS events and is waited for. The data
come from a seeded PRNG (`SEED`), so a failure reproduces; Hypothesis draws the filter combinations —
subsets of the real values of A and B, plus sometimes a value nobody has.

How it runs: pytest-asyncio (1.x, session loop) supports `@given` on an `async def` test — its
`AsyncHypothesisTest` item wraps Hypothesis' inner test so that every example runs to completion on
the session's event loop, where the services also run. So the test awaits the API directly; no example
is drawn outside Hypothesis (no `find`/`example()`), and shrinking works as usual. The data set is a
module-scoped fixture, not a function-scoped one, so it is built once and no health check objects.
The example database is off (`database=None`) so that runs leave no files behind.

Properties, for every drawn filter set:
- paging through the feed yields exactly the model's matching documents of A, each once, newest first,
  with the Work/Mission/Team titles of A's catalog — and never an id of B;
- each facet's counts equal the model's disjunctive counts, and equal the number of items the feed
  returns for the same filters with that facet's own filter replaced by just that value.
"""

import asyncio
import random
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext

from cortex_contracts.catalog import CatalogEntity
from cortex_contracts.doc_classes import DOC_CLASSES
from cortex_contracts.memory_item import ItemStatus
from tests.catalog_events import publish_catalog
from tests.conftest import Org
from tests.events import IndexedWatcher, publish_upsert, upsert_event
from tests.gateways import ROOMY_LIMITS, running_gateway
from tests.infrastructure import Infrastructure
from tests.org_clients import close_org, create_org
from tests.processed import CATALOG_CONSUMER, inbox_keys, wait_processed
from tests.services import RunningServices

pytestmark = pytest.mark.e2e

SEED = 20261130
FACETS = ("type", "work", "mission", "team", "source", "status", "tag")
CLASSES = ["spec", "runbook", "design", "decision", "faq", None]
TAGS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
STATUSES = ["draft", "published", "archived"]
SOURCES = ["kb", "wiki", "drive"]


@dataclass(frozen=True)
class Doc:
    id: str
    doc_class: str | None
    tags: frozenset[str]
    status: str
    source: str
    work: str | None


@dataclass
class Catalog:
    works: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # id -> (title, mission id)
    missions: dict[str, str] = field(default_factory=dict)  # id -> title
    teams: dict[str, str] = field(default_factory=dict)  # id -> name
    owners: dict[str, set[str]] = field(default_factory=dict)  # work id -> team ids

    def mission_of(self, work: str | None) -> str | None:
        return self.works[work][1] if work in self.works else None

    def teams_of(self, work: str | None) -> set[str]:
        return self.owners.get(work, set()) if work else set()

    def values(self, facet: str, doc: Doc) -> set[str]:
        """The document's values for one facet, as the facet counts them."""
        mission = self.mission_of(doc.work)
        return {
            "type": {doc.doc_class} if doc.doc_class else set(),
            "work": {doc.work} if doc.work in self.works else set(),
            "mission": {mission} if mission else set(),
            "team": self.teams_of(doc.work),
            "source": {doc.source},
            "status": {doc.status},
            "tag": set(doc.tags),
        }[facet]

    def matches(self, doc: Doc, filters: dict[str, list[str]], *, except_facet: str | None = None) -> bool:
        for facet, wanted in filters.items():
            if facet == except_facet or not wanted:
                continue
            # The Work filter is on the document's own Work id, whether the catalog knows the Work or not.
            have = ({doc.work} if doc.work else set()) if facet == "work" else self.values(facet, doc)
            if not have & set(wanted):
                return False
        return True

    def label(self, facet: str, value: str) -> str:
        labels = {
            "type": DOC_CLASSES.get(value, value),
            "work": self.works[value][0] if value in self.works else value,
            "mission": self.missions.get(value, value),
            "team": self.teams.get(value, value),
            "status": value.capitalize(),
        }
        return labels.get(facet, value)


@dataclass(repr=False)
class World:
    base_url: str
    a: Org
    b: Org
    catalog: Catalog  # A's
    docs: list[Doc]  # A's
    b_ids: set[str]
    pools: dict[str, list[str]]  # per facet: A's values, B's values

    def __repr__(self) -> str:  # Hypothesis prints the arguments of a failing example
        return f"World(a={self.a.slug}, b={self.b.slug}, seed={SEED})"

    def client(self, org: Org) -> httpx.AsyncClient:
        """A fresh client per example: between examples the event loop stands still, and a kept-alive
        connection could meet the server's keep-alive timeout the moment the loop runs again."""
        return httpx.AsyncClient(base_url=self.base_url, timeout=30, headers=dict(org.member.headers))


async def _publish_catalog(
    js: JetStreamContext, org: Org, catalog: Catalog, *, works: int, without_mission: int
) -> list[str]:
    """Missions, Works (the last `without_mission` of them without a Mission), Teams and what they own."""
    events = []
    missions = [str(uuid.uuid4()) for _ in range(3 if works > 2 else 1)]
    for n, mission_id in enumerate(missions):
        catalog.missions[mission_id] = f"Mission {n}"
        events.append(
            await publish_catalog(
                js, org.id, CatalogEntity.MISSION, {"missionId": mission_id, "title": f"Mission {n}", "version": 1}
            )
        )
    work_ids = [str(uuid.uuid4()) for _ in range(works)]
    for n, work in enumerate(work_ids):
        mission = missions[n % len(missions)] if n < works - without_mission else None
        catalog.works[work] = (f"Work {n}", mission)
        data: dict[str, Any] = {"workId": work, "title": f"Work {n}", "version": 1}
        if mission:
            data["missionId"] = mission
        events.append(await publish_catalog(js, org.id, CatalogEntity.WORK, data))
    teams = [str(uuid.uuid4()) for _ in range(2 if works > 2 else 1)]
    for n, team in enumerate(teams):
        catalog.teams[team] = f"Team {n}"
        events.append(
            await publish_catalog(js, org.id, CatalogEntity.TEAM, {"teamId": team, "name": f"Team {n}", "version": 1})
        )
    # Team 0 owns Works 0 and 2; Team 1 owns Works 2 and 4: Work 2 has two owners, Works 1, 3, 5 none.
    ownership = [(teams[0], work_ids[0])] + (
        [(teams[0], work_ids[2]), (teams[1], work_ids[2]), (teams[1], work_ids[4])] if works > 2 else []
    )
    for team, work in ownership:
        catalog.owners.setdefault(work, set()).add(team)
        events.append(
            await publish_catalog(
                js,
                org.id,
                CatalogEntity.TEAM_RESOURCE,
                {"teamId": team, "resourceType": "work", "resourceId": work, "version": 1},
            )
        )
    return events


def _random_docs(rng: random.Random, count: int, works: list[str | None], *, extra_tag: str | None = None) -> list[Doc]:
    docs = []
    for _ in range(count):
        tags = set(rng.sample(TAGS, rng.randint(0, 3)))
        if extra_tag and rng.random() < 0.5:
            tags.add(extra_tag)
        docs.append(
            Doc(
                id=str(uuid.uuid4()),
                doc_class=rng.choice([*CLASSES, "policy"] if extra_tag else CLASSES),
                tags=frozenset(tags),
                status=rng.choice(STATUSES),
                source=rng.choice([*SOURCES, "b-source"] if extra_tag else SOURCES),
                work=rng.choice(works),
            )
        )
    return docs


async def _index(js: JetStreamContext, nats_client: NATS, org: Org, docs: list[Doc]) -> None:
    watcher = await IndexedWatcher().start(nats_client, org.id)
    try:
        for n, doc in enumerate(docs):
            extra: dict[str, Any] = {"tags": sorted(doc.tags), "status": doc.status, "source": doc.source}
            if doc.doc_class:
                extra["docClass"] = doc.doc_class
            if doc.work:
                extra["workId"] = doc.work
            event = upsert_event(
                org.id, uuid.UUID(doc.id), title=f"Document {n}", body=f"Text {n}.", version=1, **extra
            )
            await publish_upsert(js, event)
        for doc in docs:
            await watcher.wait_for(uuid.UUID(doc.id), 1)
    finally:
        await watcher.stop()


@pytest.fixture(scope="module")
async def base_url(migrated: Infrastructure, services: RunningServices) -> AsyncIterator[str]:
    """A gateway with room for the hundreds of requests the examples make with one token."""
    async with running_gateway(migrated, **ROOMY_LIMITS) as url:
        yield url


@pytest.fixture(scope="module")
async def world(
    base_url: str, migrated: Infrastructure, services: RunningServices, js: JetStreamContext, nats_client: NATS
) -> AsyncIterator[World]:
    rng = random.Random(SEED)
    a = await create_org(migrated.database_url, base_url, services.secret, prefix="feed-a")
    b = await create_org(migrated.database_url, base_url, services.secret, prefix="feed-b")
    try:
        catalog, b_catalog = Catalog(), Catalog()
        events = inbox_keys(a.id, await _publish_catalog(js, a, catalog, works=6, without_mission=2))
        events += inbox_keys(b.id, await _publish_catalog(js, b, b_catalog, works=2, without_mission=1))
        a_works: list[str | None] = [*catalog.works, None]
        docs = _random_docs(rng, 40, a_works)
        # B: the same kinds of values and some of its own; a few name A's Works (ids are only ids).
        b_docs = _random_docs(rng, 12, [*b_catalog.works, None, *list(catalog.works)[:2]], extra_tag="b-only")
        await _index(js, nats_client, a, docs)
        await _index(js, nats_client, b, b_docs)
        await wait_processed(migrated.database_url, CATALOG_CONSUMER, events)
        pools = {
            "type": sorted({c for c in CLASSES if c} | {"policy"}),
            "work": [*catalog.works, *b_catalog.works],
            "mission": [*catalog.missions, *b_catalog.missions],
            "team": [*catalog.teams, *b_catalog.teams],
            "source": [*SOURCES, "b-source"],
            "status": STATUSES,
            "tag": [*TAGS, "b-only"],
        }
        yield World(base_url, a, b, catalog, docs, {d.id for d in b_docs}, pools)
    finally:
        await close_org(a)
        await close_org(b)


def _unknown(facet: str) -> st.SearchStrategy[str]:
    if facet in {"work", "mission", "team"}:
        return st.uuids().map(str)
    if facet == "status":  # a closed set (an unknown status is a 422): one no document has
        return st.just(ItemStatus.FAILED.value)
    return st.text(alphabet="abcdefghijklmnopqrstuvwxyz-", min_size=1, max_size=12)


def filter_sets(pools: dict[str, list[str]]) -> st.SearchStrategy[dict[str, list[str]]]:
    def one(facet: str) -> st.SearchStrategy[list[str]]:
        known = st.lists(st.sampled_from(pools[facet]), min_size=1, max_size=3, unique=True)
        with_unknown = st.tuples(known, _unknown(facet)).map(lambda pair: [*pair[0], pair[1]])
        return st.one_of(st.just([]), st.just([]), known, with_unknown)

    return st.fixed_dictionaries({facet: one(facet) for facet in FACETS})


Params = list[tuple[str, str | int | float | bool | None]]


def _params(filters: dict[str, list[str]], **extra: Any) -> Params:
    return [(facet, value) for facet, values in filters.items() for value in values] + list(extra.items())


async def _feed(client: httpx.AsyncClient, filters: dict[str, list[str]], limit: int = 100) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(100):
        extra: dict[str, Any] = {"limit": limit} | ({"cursor": cursor} if cursor else {})
        response = await client.get("/api/memory", params=_params(filters, **extra))
        assert response.status_code == 200, response.text
        page = response.json()
        items += page["items"]
        cursor = page.get("nextCursor")
        if not cursor:
            return items
    raise AssertionError("the feed never ended")


def _check_item(world: World, item: dict[str, Any], doc: Doc) -> None:
    catalog = world.catalog
    assert item.get("docClass") == doc.doc_class
    assert item.get("source") == doc.source
    assert item.get("workId") == doc.work
    assert item.get("workTitle") == (catalog.works[doc.work][0] if doc.work in catalog.works else None)
    mission = catalog.mission_of(doc.work)
    assert (item.get("missionId"), item.get("missionTitle")) == (mission, catalog.missions.get(mission or ""))
    teams = catalog.teams_of(doc.work)
    if teams:
        assert item["teamId"] in teams
        assert item["teamName"] == catalog.teams[item["teamId"]]
    else:
        assert "teamId" not in item
        assert "teamName" not in item


# No shrinking: an example costs dozens of requests, and shrinking one can take minutes; the failing
# example Hypothesis prints is small enough to read (a few values per facet).
EXAMPLES = settings(
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
    phases=[Phase.explicit, Phase.generate],
)


@settings(EXAMPLES, max_examples=20)
@given(data=st.data())
async def test_feed_items_satisfy_every_filter_and_facets_count_what_the_feed_returns(
    world: World, data: st.DataObject
) -> None:
    filters = data.draw(filter_sets(world.pools), label="filters")
    limit = data.draw(st.sampled_from([7, 100]), label="limit")
    async with world.client(world.a) as client:
        await _check_feed_and_facets(world, client, filters, limit)


async def _check_feed_and_facets(
    world: World, client: httpx.AsyncClient, filters: dict[str, list[str]], limit: int
) -> None:
    catalog, by_id = world.catalog, {doc.id: doc for doc in world.docs}

    # The feed: exactly the matching documents of A, once each, newest first.
    items = await _feed(client, filters, limit)
    ids = [item["id"] for item in items]
    expected = {doc.id for doc in world.docs if catalog.matches(doc, filters)}
    assert not set(ids) & world.b_ids
    assert len(ids) == len(set(ids)), "an item appeared twice"
    assert set(ids) == expected
    for item in items:
        _check_item(world, item, by_id[item["id"]])
    order = [(datetime.fromisoformat(item["updatedAt"]), item["id"]) for item in items]
    assert order == sorted(order, reverse=True)

    # The facets: disjunctive counts, equal to the model's and to what the feed returns.
    response = await client.get("/api/memory/facets", params=_params(filters))
    assert response.status_code == 200, response.text
    facets = response.json()
    assert set(facets) == set(FACETS)  # A has Works with Missions, and Teams
    checks: list[tuple[str, str, int]] = []
    for facet in FACETS:
        counts: Counter[str] = Counter()
        for doc in world.docs:
            if catalog.matches(doc, filters, except_facet=facet):
                counts.update(catalog.values(facet, doc))
        wanted = dict(counts) | {value: 0 for value in filters[facet] if value not in counts}
        shown = {chip["value"]: chip["count"] for chip in facets[facet]}
        assert shown == wanted, facet
        for chip in facets[facet]:
            if chip["count"]:  # (selected chips with nothing behind them: see the test after this one)
                assert chip["label"] == catalog.label(facet, chip["value"]), (facet, chip)
            checks.append((facet, chip["value"], chip["count"]))

    requests = asyncio.Semaphore(6)

    async def feed_count(facet: str, value: str) -> int:
        async with requests:
            return len(await _feed(client, {**filters, facet: [value]}))

    found = await asyncio.gather(*(feed_count(facet, value) for facet, value, _ in checks))
    assert [(f, v, n) for (f, v, _), n in zip(checks, found, strict=True)] == checks


async def test_a_selected_chip_with_nothing_behind_it_keeps_its_title(world: World) -> None:
    """A selected Work, Mission or Team chip whose count drops to 0 is labelled like the others."""
    catalog = world.catalog
    work, mission, team = next(iter(catalog.works)), next(iter(catalog.missions)), next(iter(catalog.teams))
    filters = {"work": [work], "mission": [mission], "team": [team], "tag": ["no-document-has-this-tag"]}
    response = await world.a.member.get("/api/memory/facets", params=_params(filters))
    assert response.status_code == 200, response.text
    facets = response.json()
    chips = {facet: {chip["value"]: chip for chip in facets[facet]} for facet in ("work", "mission", "team")}
    assert chips["work"][work] == {"value": work, "label": catalog.works[work][0], "count": 0}
    assert chips["mission"][mission] == {"value": mission, "label": catalog.missions[mission], "count": 0}
    assert chips["team"][team] == {"value": team, "label": catalog.teams[team], "count": 0}


@settings(EXAMPLES, max_examples=15)
@given(data=st.data())
async def test_nothing_of_a_appears_for_b_whatever_the_filters(world: World, data: st.DataObject) -> None:
    filters = data.draw(filter_sets(world.pools), label="filters")
    a_ids = {doc.id for doc in world.docs}
    a_only = [*world.catalog.works, *world.catalog.missions, *world.catalog.teams]
    async with world.client(world.b) as client:
        items = await _feed(client, filters)
        response = await client.get("/api/memory/facets", params=_params(filters))
    assert {item["id"] for item in items} <= world.b_ids
    for item in items:  # B's documents that name A's Work ids get none of A's titles
        assert "workTitle" not in item or item["workId"] not in world.catalog.works
        assert item.get("missionId") not in world.catalog.missions
    assert response.status_code == 200, response.text
    text = response.text
    for value in a_ids:
        assert value not in text
    for facet in ("work", "mission", "team"):
        for chip in response.json().get(facet) or []:
            if chip["value"] not in a_only:
                continue
            assert chip["label"] == chip["value"]  # never A's title
            if facet != "work":  # only when B itself selected it: a chip with nothing behind it
                assert (chip["value"] in filters[facet], chip["count"]) == (True, 0)
            # A Work id B's own documents name is counted for them, as `work=<id>` lists them (QA 30).
