"""A document event's docClass and source are facet values: kept without surrounding white space, a blank
class is none, and a blank source is refused; so is a blank title, and a padded one is trimmed (QA 42: `""`,
`"  "` and `" spec "` each became a facet value that no filter could select)."""

import uuid
from typing import Any

import pytest
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext

from cortex_contracts import subjects
from tests.conftest import Org
from tests.dlq import read_dead_letters
from tests.events import IndexedWatcher, publish_upsert, search_ids, upsert_and_wait, upsert_event

pytestmark = pytest.mark.e2e


async def facet_values(org: Org, facet: str) -> list[str]:
    response = await org.member.get("/api/memory/facets")
    assert response.status_code == 200, response.text
    return sorted(value["value"] for value in response.json()[facet])


async def item(org: Org, document_id: uuid.UUID) -> dict[str, Any]:
    response = await org.member.get(f"/api/memory/documents/{document_id}")
    assert response.status_code == 200, response.text
    found: dict[str, Any] = response.json()["item"]
    return found


async def filtered_ids(org: Org, **params: str) -> list[str]:
    response = await org.member.get("/api/memory", params=params)
    assert response.status_code == 200, response.text
    return sorted(found["id"] for found in response.json()["items"])


async def test_a_blank_class_is_none_and_a_padded_class_or_source_is_trimmed(
    org: Org, js: JetStreamContext, nats_client: NATS
) -> None:
    empty, blank, padded, plain = uuid.uuid4(), uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    await upsert_and_wait(
        js,
        nats_client,
        org.id,
        upsert_event(org.id, empty, title="Empty class", body="One.", version=1, docClass=""),
        upsert_event(org.id, blank, title="Blank class", body="Two.", version=1, docClass=" \t "),
        upsert_event(org.id, padded, title=" Padded\n", body="Three.", version=1, docClass="  spec ", source=" wiki  "),
        upsert_event(org.id, plain, title="Plain", body="Four.", version=1, docClass="spec", source="wiki"),
    )

    assert await facet_values(org, "type") == ["spec"]  # before: "", " \t ", "  spec " and "spec"
    assert await facet_values(org, "source") == ["kb", "wiki"]  # before: " wiki  " too (the first two are `kb`'s)
    assert (await item(org, empty))["title"] == "Empty class"
    assert "docClass" not in await item(org, empty)
    assert "docClass" not in await item(org, blank)
    trimmed = await item(org, padded)
    assert (trimmed["title"], trimmed["docClass"], trimmed["source"]) == ("Padded", "spec", "wiki")
    assert await filtered_ids(org, type="spec") == sorted([str(padded), str(plain)])
    assert await filtered_ids(org, source="wiki") == sorted([str(padded), str(plain)])
    assert await filtered_ids(org, type=" spec ", source="wiki\t") == sorted([str(padded), str(plain)])


@pytest.mark.parametrize(("field", "blank"), [("source", "   "), ("title", " \u200b ")])
async def test_a_blank_source_or_title_is_dead_lettered_with_its_reason(
    org: Org, js: JetStreamContext, nats_client: NATS, field: str, blank: str
) -> None:
    watcher = await IndexedWatcher().start(nats_client, org.id)
    nowhere, after = uuid.uuid4(), uuid.uuid4()

    await publish_upsert(js, upsert_event(org.id, nowhere, body="x", version=1, **{"title": "Named", field: blank}))
    await publish_upsert(js, upsert_event(org.id, after, title="After it", body="Still indexed.", version=1))

    await watcher.wait_for(after, 1)
    await watcher.stop()
    (letter,) = await read_dead_letters(js, org.id, 1)
    assert letter.subject == f"dlq.{subjects.kb_document_upserted(org.id)}"
    assert letter.headers["Cortex-Dlq-Reason"] == "poison message"
    assert f"{field} must not be blank" in letter.record["error"]
    assert await search_ids(org.member) == [str(after)]
