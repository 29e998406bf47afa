"""A document re-indexed while a search runs is shown as one version: its title with its own text."""

import uuid
from typing import Any

import pytest
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext

from cortex_aggregator import items
from tests.conftest import Org
from tests.events import upsert_and_wait, upsert_event

pytestmark = pytest.mark.e2e


async def index(js: JetStreamContext, nats_client: NATS, org: Org, doc_id: uuid.UUID, version: int, text: str) -> None:
    event = upsert_event(org.id, doc_id, title=f"Version {version}", body=text, version=version)
    await upsert_and_wait(js, nats_client, org.id, event)


async def test_a_document_reindexed_mid_search_shows_its_new_title_with_its_new_text(
    org: Org, js: JetStreamContext, nats_client: NATS, monkeypatch: pytest.MonkeyPatch
) -> None:
    word = f"zephyr{uuid.uuid4().hex[:8]}"
    doc_id = uuid.uuid4()
    await index(js, nats_client, org, doc_id, 1, f"The {word} plan, first draft.")
    read_rows = items.rows_with_passages
    reindexed: list[bool] = []

    async def version_2_commits_then_rows(*args: Any, **kwargs: Any) -> Any:
        # Between the legs (which found version 1's passage) and the rows of the page.
        if not reindexed:
            reindexed.append(True)
            await index(js, nats_client, org, doc_id, 2, f"The {word} plan, rewritten from scratch.")
        return await read_rows(*args, **kwargs)

    # The session's aggregator runs in this process: the patch applies to the search below.
    monkeypatch.setattr(items, "rows_with_passages", version_2_commits_then_rows)
    response = await org.member.get("/api/memory", params={"q": word})
    monkeypatch.undo()

    assert response.status_code == 200, response.text
    assert reindexed
    [item] = response.json()["items"]
    # The legs matched version 1's passage, which is gone: the page shows version 2, its title and its text.
    assert (item["title"], item["snippet"]) == ("Version 2", f"The {word} plan, rewritten from scratch.")
