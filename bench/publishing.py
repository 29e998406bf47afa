"""Publishing KB documents as an upstream service would, and hearing back from the indexer."""

import asyncio
import json
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from cortex_contracts import subjects
from cortex_contracts.documents import TYPE_DOCUMENT_UPSERTED
from cortex_contracts.envelope import Envelope, new_envelope
from cortex_messaging.publisher import publish_event


@dataclass(frozen=True)
class Document:
    id: uuid.UUID
    title: str
    body: str


@dataclass
class IndexedLog:
    """Arrival time and chunk count of each expected document's `document.indexed` event."""

    expected: set[str]
    arrivals: dict[str, float] = field(default_factory=dict)
    chunks: dict[str, int] = field(default_factory=dict)
    not_embedded: list[str] = field(default_factory=list)
    complete: asyncio.Event = field(default_factory=asyncio.Event)

    async def on_message(self, msg: Msg) -> None:
        data = json.loads(msg.data)["data"]
        document_id = data["documentId"]
        if document_id not in self.expected or document_id in self.arrivals:
            return
        self.arrivals[document_id] = time.perf_counter()
        self.chunks[document_id] = int(data["chunks"])
        if not data.get("embedded"):
            self.not_embedded.append(document_id)
        if len(self.arrivals) == len(self.expected):
            self.complete.set()


def upsert_event(org_id: uuid.UUID, doc: Document) -> Envelope:
    """The event an upstream KB service publishes (the same shape as tests/events.py `upsert_event`)."""
    data = {
        "documentId": str(doc.id),
        "organizationId": str(org_id),
        "title": doc.title,
        "body": doc.body,
        "version": 1,
    }
    return new_envelope(
        event_type=TYPE_DOCUMENT_UPSERTED, source="bench/upstream", org_id=org_id, subject=str(doc.id), data=data
    )


async def wait_with_progress(log: IndexedLog, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not log.complete.is_set():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"only {len(log.arrivals)}/{len(log.expected)} documents indexed in {timeout:g} s")
        try:
            await asyncio.wait_for(log.complete.wait(), timeout=min(15.0, remaining))
        except TimeoutError:
            print(f"  … {len(log.arrivals)}/{len(log.expected)} documents indexed", file=sys.stderr, flush=True)


async def publish_and_wait(nc: NATS, org_id: uuid.UUID, documents: Sequence[Document], timeout: float) -> IndexedLog:
    """Publish every document, return once the indexer has reported each one."""
    log = IndexedLog(expected={str(doc.id) for doc in documents})
    subscription = await nc.subscribe(subjects.cortex_document_indexed(org_id), cb=log.on_message)
    try:
        await nc.flush()
        js = nc.jetstream()
        for doc in documents:
            await publish_event(js, subjects.kb_document_upserted(org_id), upsert_event(org_id, doc))
        await wait_with_progress(log, timeout)
    finally:
        await subscription.unsubscribe()
    return log
