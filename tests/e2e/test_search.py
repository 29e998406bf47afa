"""Documents published as KB events become searchable through the HTTP API."""

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
