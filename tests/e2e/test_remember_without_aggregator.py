"""Remembering needs the gateway, NATS and PostgreSQL, not the aggregator: an agent's write is not lost to
an outage of the reads (QA 36: with the aggregator paused, every remember answered 504 after 5 s)."""

import asyncio

import pytest

from cortex_aggregator.bootstrap import build as build_aggregator
from cortex_aggregator.settings import AggregatorSettings
from cortex_contracts import subjects
from cortex_gateway.tokens import issue_token
from tests.conftest import Org
from tests.gateways import running_gateway
from tests.infrastructure import Infrastructure
from tests.org_clients import client_for
from tests.own_nats import own_nats_client
from tests.services import SECRET, service_running

pytestmark = pytest.mark.e2e


async def test_an_entry_is_accepted_with_no_aggregator_answering(migrated: Infrastructure, org: Org) -> None:
    async with own_nats_client("no-aggregator") as nc:  # a NATS no aggregator listens on
        url = nc.connected_url
        assert url is not None
        alone = Infrastructure(database_url=migrated.database_url, nats_url=f"nats://{url.netloc}")
        token = issue_token(f"member-{org.slug}", SECRET)
        async with running_gateway(alone) as base_url, client_for(base_url, token, org.slug) as member:
            response = await member.post("/api/memory/entries", json={"content": "Rotate keys every 90 days"})
            # Asked again before the indexer (none runs here) stored it: JetStream kept one event.
            again = await member.post("/api/memory/entries", json={"content": "Rotate keys every 90 days"})

        stream = await nc.jetstream().find_stream_name_by_subject(subjects.memory_entry_remembered(org.id))
        held = await nc.jetstream().stream_info(stream)

    assert response.status_code == 202, response.text
    assert response.json()["deduplicated"] is False
    assert again.json() == {"id": response.json()["id"], "deduplicated": True}
    assert held.state.messages == 1


async def test_a_wait_that_times_out_names_the_accepted_ids_as_members(migrated: Infrastructure, org: Org) -> None:
    """No indexer runs here: the 504 says the write was accepted, and gives its id as a member (QA 41: only
    in the detail's prose), so that an agent can recall it, or ask again — the same id — later."""
    async with own_nats_client("no-indexer") as nc:
        url = nc.connected_url
        assert url is not None
        alone = Infrastructure(database_url=migrated.database_url, nats_url=f"nats://{url.netloc}")
        aggregator = build_aggregator(
            AggregatorSettings(database_url=alone.app_database_url, nats_url=alone.nats_url, secret=SECRET)
        )
        async with (
            service_running(aggregator),  # a note's wait asks it whether the note is searchable already
            running_gateway(alone, wait_timeout_seconds=0.5) as base_url,
            client_for(base_url, issue_token(f"admin-{org.slug}", SECRET), org.slug) as admin,
        ):
            await asyncio.wait_for(aggregator.ready.wait(), 60)
            entry = await admin.post("/api/memory/entries?wait=true", json={"content": "Rotate keys every 90 days"})
            note = await admin.post("/api/memory/documents?wait=true", json={"title": "Keys", "body": "Rotate them."})
            accepted = await admin.post("/api/memory/entries", json={"content": "Rotate keys every 90 days"})

    for response in (entry, note):
        assert (response.status_code, response.headers["content-type"]) == (504, "application/problem+json")
        assert response.json()["id"] in response.json()["detail"]
    assert entry.json()["id"] == accepted.json()["id"]
