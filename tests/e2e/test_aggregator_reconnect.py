"""The aggregator takes pooled connections without a pre-ping; when the server has closed them, requests
still answer (the request is worked once more on a fresh connection)."""

import pytest
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.pool import Pool

from cortex_aggregator.bootstrap import APPLICATION_NAME
from tests.backends import terminate_backends
from tests.conftest import OrgFactory

pytestmark = pytest.mark.e2e


async def test_requests_go_on_after_the_server_closed_the_aggregators_connections(
    make_org: OrgFactory, owner: AsyncEngine
) -> None:
    org = await make_org()
    paths = ["/api/memory/stats", "/api/memory?q=pricing", "/api/memory/facets", "/api/memory"]
    for path in paths:  # the aggregator's pool holds connections now
        assert (await org.member.get(path)).status_code == 200
    invalidated: list[BaseException | None] = []

    def on_invalidate(_connection: object, _record: object, exc: BaseException | None) -> None:
        invalidated.append(exc)  # only the aggregator's connections were closed: its pool's

    event.listen(Pool, "invalidate", on_invalidate)
    try:
        assert await terminate_backends(owner, APPLICATION_NAME) >= 1
        for path in paths:
            response = await org.member.get(path)
            assert response.status_code == 200, response.text
    finally:
        event.remove(Pool, "invalidate", on_invalidate)
    assert invalidated, "no request met a closed connection: the test did not test the retry"
