"""Reads while the aggregator's PostgreSQL cannot be reached are 503s with Retry-After, as the gateway's own
database failures are: the caller may try again. They were 502s, "the search service failed" (QA 46)."""

import asyncio
import socket

import pytest

from cortex_aggregator.bootstrap import build as build_aggregator
from cortex_aggregator.settings import AggregatorSettings
from cortex_gateway.tokens import issue_token
from tests.conftest import Org
from tests.gateways import running_gateway
from tests.infrastructure import Infrastructure
from tests.org_clients import client_for
from tests.own_nats import own_nats_client
from tests.services import SECRET, service_running

pytestmark = pytest.mark.e2e

READS = ["/api/memory?q=pricing", "/api/memory", "/api/memory/facets", "/api/memory/stats", "/api/memory/recall?q=keys"]


def _nowhere() -> str:
    """A database URL at a port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"postgresql://cortex_app@127.0.0.1:{probe.getsockname()[1]}/cortex"


async def test_reads_are_503_while_the_aggregators_database_is_down(migrated: Infrastructure, org: Org) -> None:
    async with own_nats_client("aggregator-without-database") as nc:
        url = nc.connected_url
        assert url is not None
        alone = Infrastructure(database_url=migrated.database_url, nats_url=f"nats://{url.netloc}")
        # The gateway reaches PostgreSQL (it looks the caller up); the aggregator does not.
        aggregator = build_aggregator(
            AggregatorSettings(database_url=_nowhere(), nats_url=alone.nats_url, secret=SECRET)
        )
        async with (
            service_running(aggregator),
            running_gateway(alone) as base_url,
            client_for(base_url, issue_token(f"member-{org.slug}", SECRET), org.slug) as member,
        ):
            await asyncio.wait_for(aggregator.ready.wait(), 60)
            responses = {path: await member.get(path) for path in READS}

    for path, response in responses.items():
        assert (response.status_code, response.headers["content-type"]) == (503, "application/problem+json"), path
        assert response.headers["retry-after"] == "5", path
        assert response.json()["detail"] == "The database is not reachable; try again.", path
