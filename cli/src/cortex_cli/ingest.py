"""`cortex ingest`: publish one `kb.<org>.document.upserted` per file, exactly as an upstream service would."""

import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from nats.js import JetStreamContext
from nats.js.api import ObjectStoreConfig
from nats.js.errors import BucketNotFoundError
from tqdm import tqdm

from cortex_contracts import subjects
from cortex_contracts.documents import TYPE_DOCUMENT_UPSERTED, DocumentUpserted, ObjectRef
from cortex_contracts.envelope import new_envelope
from cortex_messaging.connection import connect
from cortex_messaging.publisher import publish_event

INLINE_BODY_LIMIT = 256 * 1024  # larger bodies go through the Object Store (NATS max payload is 1 MiB)
BODY_BUCKET = "cortex-bodies"
SOURCE = "cortex/cli"
FILE_NAMESPACE = uuid.UUID("5b3c8a4e-1f0d-4c1e-9b7a-6d2f0c9e8a11")


@dataclass(frozen=True)
class IngestOptions:
    organization_id: uuid.UUID
    work_id: uuid.UUID | None
    doc_class: str | None
    tags: tuple[str, ...]


def title_of(path: Path, body: str) -> str:
    """The first markdown H1, else the file name."""
    for line in body.splitlines()[:50]:
        if line.startswith("# "):
            return line[2:].strip()[:300] or path.stem
    return path.stem[:300]


def document_id_for(options: IngestOptions, path: Path) -> uuid.UUID:
    """Stable per organization and file: ingesting the file again updates the same document."""
    return uuid.uuid5(FILE_NAMESPACE, f"{options.organization_id}:{path.resolve()}")


async def _body_bucket(js: JetStreamContext) -> None:
    try:
        await js.object_store(BODY_BUCKET)
    except BucketNotFoundError:
        await js.create_object_store(BODY_BUCKET, ObjectStoreConfig(description="Large KB document bodies"))


async def ingest_files(nats_url: str, paths: list[Path], options: IngestOptions) -> int:
    nc = await connect(nats_url, name="cortex-cli")
    published = 0
    try:
        js = nc.jetstream()
        for path in tqdm(paths, unit="file", disable=len(paths) < 10):
            body = path.read_text(encoding="utf-8", errors="replace")
            document_id = document_id_for(options, path)
            ref = None
            if len(body.encode()) > INLINE_BODY_LIMIT:
                await _body_bucket(js)
                ref = ObjectRef(bucket=BODY_BUCKET, name=f"{document_id}/{time.time_ns()}")
                await (await js.object_store(BODY_BUCKET)).put(ref.name, body.encode())
            payload = DocumentUpserted(
                document_id=document_id,
                organization_id=options.organization_id,
                work_id=options.work_id,
                title=title_of(path, body),
                doc_class=options.doc_class,
                tags=list(options.tags),
                body=None if ref else body,
                body_ref=ref,
                source="cli",
                version=time.time_ns() // 1000,
            )
            event = new_envelope(
                event_type=TYPE_DOCUMENT_UPSERTED,
                source=SOURCE,
                org_id=options.organization_id,
                subject=str(document_id),
                data=payload.model_dump(mode="json", by_alias=True, exclude_none=True),
            )
            await publish_event(js, subjects.kb_document_upserted(options.organization_id), event)
            published += 1
    finally:
        await nc.drain()
    return published
