"""The `http` reranker end to end: an organization that chooses it (`cortex plugins use … reranker http`)
gets its searches reordered by the rerank endpoint; another organization with the same documents keeps
the fused order; an endpoint that fails, is slow or answers nonsense leaves the fused order, and the
search still answers 200.

The endpoint is tests/rerank_server.py, whose "model" prefers passages that say "zebra": the document
that fusion ranks last for "pricing" is the one it ranks first."""

import time
import uuid

import pytest
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext

from cortex_cli.plugins import choose_plugin
from cortex_plugins import PluginRegistry
from tests.conftest import Org, OrgFactory
from tests.events import IndexedWatcher, publish_upsert, search_ids, upsert_event
from tests.infrastructure import Infrastructure
from tests.rerank_server import Behaviour, RerankServer

pytestmark = pytest.mark.e2e

DOCUMENTS = {
    "Pricing": "Our pricing page lists pricing per seat, pricing per team and pricing for enterprises.",
    "Pricing tiers": "Three pricing tiers: starter, growth and enterprise.",
    "Zebra crossing": "The zebra office sits by the zebra crossing; the zebra mascot has no pricing.",
}


async def _publish(js: JetStreamContext, nats_client: NATS, org: Org) -> dict[str, str]:
    """The documents, indexed; title -> id."""
    watcher = await IndexedWatcher().start(nats_client, org.id)
    ids = {title: uuid.uuid4() for title in DOCUMENTS}
    for title, body in DOCUMENTS.items():
        await publish_upsert(js, upsert_event(org.id, ids[title], title=title, body=f"# {title}\n\n{body}", version=1))
    for document_id in ids.values():
        await watcher.wait_for(document_id, 1)
    await watcher.stop()
    return {title: str(document_id) for title, document_id in ids.items()}


@pytest.fixture
async def orgs(
    make_org: OrgFactory, migrated: Infrastructure, js: JetStreamContext, nats_client: NATS
) -> tuple[Org, dict[str, str], Org, dict[str, str]]:
    """One organization that reranks and one that does not, with the same documents."""
    reranking, plain = await make_org(), await make_org()
    await choose_plugin(migrated.database_url, reranking.id, "reranker", "http", PluginRegistry())
    return reranking, await _publish(js, nats_client, reranking), plain, await _publish(js, nats_client, plain)


def _titles(ids: list[str], by_title: dict[str, str]) -> list[str]:
    title_of = {document_id: title for title, document_id in by_title.items()}
    return [title_of[document_id] for document_id in ids]


async def test_an_organization_that_chose_the_http_reranker_gets_its_order(
    orgs: tuple[Org, dict[str, str], Org, dict[str, str]], reranker: RerankServer
) -> None:
    reranking, reranking_ids, plain, plain_ids = orgs
    fused = _titles(await search_ids(plain.member, "pricing"), plain_ids)
    assert fused[-1] == "Zebra crossing"  # fusion ranks it last: reranking must move it

    reranker.requests.clear()
    reranked = _titles(await search_ids(reranking.member, "pricing"), reranking_ids)
    assert reranked[0] == "Zebra crossing"
    assert sorted(reranked) == sorted(fused)
    [asked] = reranker.requests
    assert asked["query"] == "pricing"
    assert asked["top_n"] == len(asked["documents"]) == 3
    assert {document.split("\n")[0] for document in asked["documents"]} == set(DOCUMENTS)

    assert _titles(await search_ids(plain.member, "pricing"), plain_ids) == fused  # untouched


async def test_pages_follow_the_reranked_order(
    orgs: tuple[Org, dict[str, str], Org, dict[str, str]], reranker: RerankServer
) -> None:
    reranking, reranking_ids, _, _ = orgs
    whole = await search_ids(reranking.member, "pricing")
    paged: list[str] = []
    params: dict[str, str | int] = {"q": "pricing", "limit": 1}
    while True:
        response = await reranking.member.get("/api/memory", params=params)
        assert response.status_code == 200, response.text
        page = response.json()
        paged += [item["id"] for item in page["items"]]
        if page.get("nextCursor") is None:
            break
        params["cursor"] = page["nextCursor"]
    assert paged == whole
    assert _titles(whole, reranking_ids)[0] == "Zebra crossing"


@pytest.mark.parametrize("behaviour", [Behaviour.ERROR_500, Behaviour.SLOW, Behaviour.PARTIAL])
async def test_a_failing_reranker_leaves_the_fused_order(
    orgs: tuple[Org, dict[str, str], Org, dict[str, str]],
    reranker: RerankServer,
    behaviour: Behaviour,
    caplog: pytest.LogCaptureFixture,
) -> None:
    reranking, reranking_ids, plain, plain_ids = orgs
    fused = _titles(await search_ids(plain.member, "pricing"), plain_ids)
    reranker.behaviour = behaviour
    try:
        started = time.monotonic()
        kept = _titles(await search_ids(reranking.member, "pricing"), reranking_ids)
        waited = time.monotonic() - started
    finally:
        reranker.behaviour = Behaviour.NORMAL
    assert kept == fused
    assert waited < reranker.delay  # a slow reranker is given up on (after 1 s), not waited for
    assert "reranker http failed, fused order kept" in caplog.text
