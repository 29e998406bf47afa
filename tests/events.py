"""Publishing KB events as an upstream service would, and waiting for their effect."""

import asyncio
import json
import uuid
from typing import Any

import httpx
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext

from cortex_contracts import subjects
from cortex_contracts.documents import TYPE_DOCUMENT_DELETED, TYPE_DOCUMENT_UPSERTED
from cortex_contracts.envelope import Envelope, new_envelope
from cortex_contracts.memory import TYPE_ENTRY_REMEMBERED, EntryRemembered, MemoryPartition, MemoryTier
from cortex_contracts.uploads import TYPE_UPLOAD_CREATED
from cortex_messaging.publisher import publish_event


def upsert_event(
    org_id: uuid.UUID, document_id: uuid.UUID, *, title: str, body: str, version: int, **extra: Any
) -> Envelope:
    data = {
        "documentId": str(document_id),
        "organizationId": str(org_id),
        "title": title,
        "body": body,
        "version": version,
        **extra,
    }
    return new_envelope(
        event_type=TYPE_DOCUMENT_UPSERTED, source="tests/upstream", org_id=org_id, subject=str(document_id), data=data
    )


def delete_event(org_id: uuid.UUID, document_id: uuid.UUID, *, version: int) -> Envelope:
    data = {"documentId": str(document_id), "organizationId": str(org_id), "version": version}
    return new_envelope(
        event_type=TYPE_DOCUMENT_DELETED, source="tests/upstream", org_id=org_id, subject=str(document_id), data=data
    )


def upload_event(
    org_id: uuid.UUID, upload_id: uuid.UUID, *, filename: str, size: int, bucket: str, name: str, version: int = 1
) -> Envelope:
    """An uploaded text file announced as the upload service would: its bytes in `bucket` under `name`."""
    data = {
        "uploadId": str(upload_id),
        "organizationId": str(org_id),
        "filename": filename,
        "mediaType": "text/plain",
        "sizeBytes": size,
        "object": {"bucket": bucket, "name": name},
        "version": version,
    }
    return new_envelope(
        event_type=TYPE_UPLOAD_CREATED, source="tests/upstream", org_id=org_id, subject=str(upload_id), data=data
    )


def remembered_event(
    org_id: uuid.UUID,
    content: str,
    *,
    partition: MemoryPartition = MemoryPartition.EPISODIC,
    **extra: Any,
) -> Envelope:
    """An organization-tier memory entry remembered as an agent runtime would announce it (without an
    `entryId`, unless `extra` names one: Cortex derives it); its subject is the entry's id."""
    payload = EntryRemembered(
        organization_id=org_id, content=content, partition=partition, tier=MemoryTier.ORG, **extra
    )
    return new_envelope(
        event_type=TYPE_ENTRY_REMEMBERED,
        source="tests/agent",
        org_id=org_id,
        subject=str(payload.id),
        data=payload.model_dump(mode="json", by_alias=True, exclude_none=True),
    )


async def publish_remembered(js: JetStreamContext, event: Envelope) -> None:
    await publish_event(js, subjects.memory_entry_remembered(event.orgid), event)


async def publish_upload(js: JetStreamContext, event: Envelope) -> None:
    await publish_event(js, subjects.kb_upload_created(event.orgid), event)


async def publish_upsert(js: JetStreamContext, event: Envelope) -> None:
    await publish_event(js, subjects.kb_document_upserted(event.orgid), event)


async def publish_delete(js: JetStreamContext, event: Envelope) -> None:
    await publish_event(js, subjects.kb_document_deleted(event.orgid), event)


class IndexedWatcher:
    """Collects `cortex.<org>.document.indexed` events so a test can wait for the indexer."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        self._changed = asyncio.Condition()

    async def start(self, nc: NATS, org_id: uuid.UUID) -> "IndexedWatcher":
        async def on_message(msg: Any) -> None:
            async with self._changed:
                self.seen.append(json.loads(msg.data)["data"])
                self._changed.notify_all()

        self._subscription = await nc.subscribe(subjects.cortex_document_indexed(org_id), cb=on_message)
        return self

    async def wait_for(self, document_id: uuid.UUID, version: int, timeout: float = 30) -> dict[str, Any]:
        def found() -> dict[str, Any] | None:
            return next((e for e in self.seen if e["documentId"] == str(document_id) and e["version"] == version), None)

        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(lambda: found() is not None)
        event = found()
        assert event is not None
        return event

    async def stop(self) -> None:
        await self._subscription.unsubscribe()

    async def drain(self) -> None:
        """Stop, but first record every event the server sent before now (a round trip, then the backlog)."""
        await self._subscription.drain()  # type: ignore[no-untyped-call]

    def count(self, document_id: uuid.UUID, version: int) -> int:
        return sum(1 for e in self.seen if e["documentId"] == str(document_id) and e["version"] == version)


async def upsert_and_wait(js: JetStreamContext, nats_client: NATS, org_id: uuid.UUID, *events: Envelope) -> None:
    """Publish the upserts and wait until the indexer has reported each one indexed."""
    watcher = await IndexedWatcher().start(nats_client, org_id)
    try:
        for event in events:
            await publish_upsert(js, event)
        for event in events:
            await watcher.wait_for(uuid.UUID(event.data["documentId"]), event.data["version"])
    finally:
        await watcher.stop()


async def search_ids(client: httpx.AsyncClient, q: str | None = None, limit: int = 50) -> list[str]:
    params: dict[str, Any] = {"limit": limit}
    if q is not None:
        params["q"] = q
    response = await client.get("/api/memory", params=params)
    assert response.status_code == 200, response.text
    return [item["id"] for item in response.json()["items"]]
