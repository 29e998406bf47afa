"""`cortex dlq list | replay`: an operator sees an organization's dead letters and, the cause fixed, sends
them again; the events are indexed, the letters are gone, and another organization's stay where they are."""

import uuid

import pytest
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from nats.js.api import ObjectStoreConfig

from cortex_contracts import subjects
from tests.cli_runs import cli
from tests.conftest import Org
from tests.dlq import read_dead_letters
from tests.events import IndexedWatcher, publish_upsert, search_ids, upsert_event
from tests.infrastructure import Infrastructure

pytestmark = pytest.mark.e2e


async def test_letters_are_listed_and_replayed_once_the_cause_is_fixed(
    org: Org, migrated: Infrastructure, js: JetStreamContext, nats_client: NATS, capsys: pytest.CaptureFixture[str]
) -> None:
    bucket, document = f"late-{uuid.uuid4().hex[:12]}", uuid.uuid4()
    # The upstream service published the event before its upload of the body had finished.
    late = upsert_event(org.id, document, title="Zebra report", body="", version=1)
    late = late.model_copy(update={"data": {**late.data, "body": None, "bodyRef": {"bucket": bucket, "name": "b"}}})
    await publish_upsert(js, late)
    other_org = uuid.uuid4()
    await js.publish(subjects.kb_document_upserted(other_org), b"not an event")
    (letter,) = await read_dead_letters(js, org.id, 1)
    assert letter.record["error"] == f"body object {bucket}/b not found"

    assert await cli(migrated, ["dlq", "list", "--org", org.slug]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    number, _, subject, reason = line.split(maxsplit=3)
    assert subject == subjects.kb_document_upserted(org.id)
    assert reason == f"poison message: body object {bucket}/b not found"

    assert await cli(migrated, ["dlq", "replay", "--org", org.slug]) == 2  # neither numbers nor --all
    assert await cli(migrated, ["dlq", "replay", "--org", org.slug, "999999"]) == 1
    assert "no dead letter of" in capsys.readouterr().err

    store = await js.create_object_store(bucket, ObjectStoreConfig())
    await store.put("b", b"The zebra migration report, uploaded at last.")
    watcher = await IndexedWatcher().start(nats_client, org.id)
    assert await cli(migrated, ["dlq", "replay", "--org", org.slug, number]) == 0
    assert capsys.readouterr().out == f"replayed {number}: {subject}\n"

    await watcher.wait_for(document, 1)
    await watcher.stop()
    assert await search_ids(org.member, "zebra migration") == [str(document)]
    assert await cli(migrated, ["dlq", "list", "--org", org.slug]) == 0
    assert capsys.readouterr().out == "no dead letters\n"
    # The other organization's letter was neither listed nor replayed.
    (kept,) = await read_dead_letters(js, other_org, 1)
    assert kept.record["reason"] == "poison message"
