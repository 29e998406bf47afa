"""An event id is its publisher's choice: the indexer's inbox records it under the event's organization.

Before, the inbox was keyed by the id alone, so an event of one organization, under an id another
organization's publisher would use later (an id derived from a document or an entry is predictable), was
claimed first and the other organization's event was dropped as "already handled".
"""

import uuid

import pytest
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext

from cortex_contracts import subjects
from cortex_contracts.envelope import Envelope
from tests.conftest import OrgFactory
from tests.events import IndexedWatcher, upsert_event

pytestmark = pytest.mark.e2e


async def publish_as(js: JetStreamContext, event: Envelope, event_id: str) -> None:
    """The event under `event_id`, with a message id of its own (JetStream's dedup is another matter)."""
    claimed = event.model_copy(update={"id": event_id})
    headers = {"Nats-Msg-Id": f"{event.orgid}-{event_id}"}
    await js.publish(subjects.kb_document_upserted(event.orgid), claimed.to_wire(), headers=headers)


async def test_an_event_id_used_first_by_another_organization_does_not_silence_this_ones(
    make_org: OrgFactory, js: JetStreamContext, nats_client: NATS
) -> None:
    theirs, mine = await make_org(), await make_org()
    shared = f"note-{uuid.uuid4()}"
    their_document, my_document = uuid.uuid4(), uuid.uuid4()
    their_reports = await IndexedWatcher().start(nats_client, theirs.id)
    my_reports = await IndexedWatcher().start(nats_client, mine.id)

    await publish_as(js, upsert_event(theirs.id, their_document, title="Theirs", body="First.", version=1), shared)
    await their_reports.wait_for(their_document, 1)
    await publish_as(js, upsert_event(mine.id, my_document, title="Mine", body="Second.", version=1), shared)

    await my_reports.wait_for(my_document, 1)  # before: dropped as already handled, no report
    feed = await mine.member.get("/api/memory")
    assert [item["id"] for item in feed.json()["items"]] == [str(my_document)]
    await their_reports.stop()
    await my_reports.stop()
