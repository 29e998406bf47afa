"""`cortex ingest`: publish each file exactly as an upstream service would.

Markdown and plain text become `kb.<org>.document.upserted` with the body inline (in the Object Store when
large). Any other file — HTML, PDF, DOCX, XLSX, PPTX, or one no extractor reads — goes to the Object Store
as it is, announced by `kb.<org>.upload.created`: the indexer extracts its text, or records why it cannot.

The two forms are two documents (a text file's, and the one the indexer makes from an upload). A file that
changes form (a text file emptied, or grown past a body's size) is one item still: once the new form is
published, the other is deleted (`kb.<org>.document.deleted`) at a newer version wherever it may exist,
live or on its way (see `ingest_file`), and its object with it if that form is live.

A file that cannot be published (unreadable, say) is one error line; the others are still published.
"""

import asyncio
import contextlib
import hashlib
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from nats.errors import ConnectionClosedError, ConnectionReconnectingError
from nats.js.errors import ObjectNotFoundError
from pydantic import ValidationError
from sqlalchemy import text
from tqdm import tqdm

from cortex_cli.unreachable import Unreachable, connect_nats
from cortex_contracts import subjects
from cortex_contracts.base import WireModel, is_blank
from cortex_contracts.documents import (
    TYPE_DOCUMENT_DELETED,
    TYPE_DOCUMENT_UPSERTED,
    UNTITLED,
    DocumentDeleted,
    DocumentUpserted,
    ObjectRef,
)
from cortex_contracts.envelope import new_envelope
from cortex_contracts.uploads import TYPE_UPLOAD_CREATED, UploadCreated, upload_document_id
from cortex_extractors import detect_media_type
from cortex_extractors.errors import CorruptFile
from cortex_extractors.limits import MAX_INPUT_BYTES, MAX_TEXT_CHARS, short_title
from cortex_extractors.markdown import first_heading
from cortex_extractors.media_types import BY_EXTENSION, PLAIN_TEXT, TEXT_TYPES
from cortex_extractors.plain_text import decode_text
from cortex_messaging.buckets import BODY_BUCKET, UPLOAD_BUCKET, Buckets, stored_if_large
from cortex_messaging.connection import disconnect
from cortex_messaging.delivery import brief
from cortex_messaging.publisher import publish_event
from cortex_store.database import make_engine, make_sessionmaker
from cortex_store.tenancy import bind_organization

SOURCE = "cortex/cli"
FILE_NAMESPACE = uuid.UUID("5b3c8a4e-1f0d-4c1e-9b7a-6d2f0c9e8a11")


@dataclass(frozen=True)
class IngestOptions:
    organization_id: uuid.UUID
    work_id: uuid.UUID | None
    doc_class: str | None
    tags: tuple[str, ...]


def _file_bytes(name: str) -> bytes:
    """A file name's bytes as the file system holds them: Python reads bytes that are not UTF-8 (`caf\\xe9.md`)
    as surrogate escapes, which no UTF-8 text can carry, and gives them back here."""
    return name.encode("utf-8", "surrogateescape")


def readable(name: str) -> str:
    """A file name as text an event can carry: bytes that are not UTF-8 become U+FFFD."""
    return _file_bytes(name).decode("utf-8", "replace")


def title_of(path: Path, body: str) -> str:
    """The title the markdown extractor reads (front matter's `title:`, else the first H1), else the file name."""
    for title in (first_heading(body), short_title(readable(path.stem))):
        if title and not is_blank(title):
            return title
    return UNTITLED


def _file_uuid(name: str) -> uuid.UUID:
    """`uuid.uuid5(FILE_NAMESPACE, name)` over the name's bytes, which uuid5 cannot take from a name with
    surrogate escapes: a name it could take keeps the id it gave (the same UTF-8 bytes)."""
    digest = hashlib.sha1(FILE_NAMESPACE.bytes + _file_bytes(name), usedforsecurity=False).digest()
    return uuid.UUID(bytes=digest[:16], version=5)


def document_id_for(options: IngestOptions, path: Path) -> uuid.UUID:
    """Stable per organization and file: ingesting the file again updates the same document."""
    return _file_uuid(f"{options.organization_id}:{path.resolve()}")


def upload_id_for(options: IngestOptions, path: Path) -> uuid.UUID:
    """Stable per organization and file, like document ids: uploading the file again replaces it."""
    return _file_uuid(f"upload:{options.organization_id}:{path.resolve()}")


def forms_of(options: IngestOptions, path: Path) -> tuple[uuid.UUID, uuid.UUID]:
    """The file's document as text, and as an upload."""
    return document_id_for(options, path), upload_document_id(upload_id_for(options, path))


LIVE = text("SELECT id FROM kb_documents WHERE organization_id = :org AND id = ANY(:ids) AND deleted_at IS NULL")


async def live_forms(database_url: str, options: IngestOptions, paths: list[Path]) -> set[uuid.UUID]:
    """Which of these files' documents, in either form, the organization holds now."""
    ids = [form for path in paths for form in forms_of(options, path)]
    engine = make_engine(database_url, pool_size=1)
    try:
        async with make_sessionmaker(engine)() as session, session.begin():
            await bind_organization(session, options.organization_id)
            return set(await session.scalars(LIVE, {"org": options.organization_id, "ids": ids}))
    finally:
        await engine.dispose()


def _version() -> int:
    return time.time_ns() // 1000


def _inline_text(data: bytes) -> str | None:
    """The body to send as text, read as the indexer's text extractor reads it (a byte-order mark is not
    text). None sends the file as an upload instead, and the indexer records why it cannot be read: not
    text, or longer than a document body may be (sent as text, the event would only be dead-lettered)."""
    try:
        text = decode_text(data)
    except CorruptFile:
        return None
    return text if len(text) <= MAX_TEXT_CHARS else None


async def _announce(
    buckets: Buckets,
    event_type: str,
    subject_of: Callable[[uuid.UUID], str],
    about: uuid.UUID,
    payload: WireModel,
    options: IngestOptions,
) -> None:
    """Publish `payload` as an event about `about`, on the organization's subject `subject_of` names."""
    event = new_envelope(
        event_type=event_type,
        source=SOURCE,
        org_id=options.organization_id,
        subject=str(about),
        data=payload.model_dump(mode="json", by_alias=True, exclude_none=True),
    )
    await publish_event(buckets.js, subject_of(options.organization_id), event)


def _body_object(options: IngestOptions, document_id: uuid.UUID) -> ObjectRef:
    return ObjectRef.owned(BODY_BUCKET, options.organization_id, f"{document_id}/body")


def _upload_object(options: IngestOptions, upload_id: uuid.UUID) -> ObjectRef:
    return ObjectRef.owned(UPLOAD_BUCKET, options.organization_id, str(upload_id))


async def _publish_document(buckets: Buckets, path: Path, body: str, options: IngestOptions) -> None:
    document_id = document_id_for(options, path)
    # One object per document, replaced by each ingest, as the upload bucket holds one per file: a new name
    # each time kept every version's body for good. (An older event still queued then reads the newer
    # body, under its older version: the newer event that follows leaves the same document.) Named as
    # _body_object names it.
    ref = await stored_if_large(buckets, options.organization_id, f"{document_id}/body", body)
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
        version=_version(),
    )
    await _announce(buckets, TYPE_DOCUMENT_UPSERTED, subjects.kb_document_upserted, document_id, payload, options)


async def _publish_upload(
    buckets: Buckets, path: Path, data: bytes, media_type: str, options: IngestOptions
) -> uuid.UUID:
    """The file's bytes into the upload bucket under its upload id, then the event that names them.

    A file over the indexer's size cap is announced without its bytes: the indexer records it as failed.
    """
    upload_id = upload_id_for(options, path)
    ref = None
    if len(data) <= MAX_INPUT_BYTES:
        ref = _upload_object(options, upload_id)
        await (await buckets.get(UPLOAD_BUCKET)).put(ref.name, data)
    payload = UploadCreated(
        upload_id=upload_id,
        organization_id=options.organization_id,
        work_id=options.work_id,
        filename=readable(path.name)[:500],
        media_type=media_type,
        size_bytes=len(data),
        object=ref,
        doc_class=options.doc_class,
        tags=list(options.tags),
        version=_version(),
    )
    await _announce(buckets, TYPE_UPLOAD_CREATED, subjects.kb_upload_created, upload_id, payload, options)
    return upload_id


async def _retract(
    buckets: Buckets, document_id: uuid.UUID, stored_as: ObjectRef | None, options: IngestOptions
) -> None:
    """Delete the document at a version newer than any published so far, and the object `stored_as` that
    held its body or file (when it was large enough for one)."""
    payload = DocumentDeleted(document_id=document_id, organization_id=options.organization_id, version=_version())
    await _announce(buckets, TYPE_DOCUMENT_DELETED, subjects.kb_document_deleted, document_id, payload, options)
    if stored_as is not None:
        with contextlib.suppress(ObjectNotFoundError):
            await (await buckets.get(stored_as.bucket)).delete(stored_as.name)


async def ingest_file(
    buckets: Buckets, path: Path, options: IngestOptions, live: set[uuid.UUID] | frozenset[uuid.UUID] = frozenset()
) -> str:
    """Publish one file, and delete its other form wherever that may exist; returns the media type it was
    published as.

    The other form may exist when it is live, and also when an ingest of a moment ago published it and the
    indexer has not stored it yet: it would then stay beside this one. An upload on its way has its file in
    the upload bucket; a text form on its way may be an inline body, which leaves no trace, so it is taken to
    exist unless the file's name says it holds no text (`report.pdf`). Otherwise nothing is sent: a second
    event for every file cost the indexer 5-10% more CPU in `bench.ingest --mix`. At a newer version the
    deletion wins whichever comes first (the indexer keeps a tombstone, and refuses the older event after
    it). The other form's object is deleted only if that form is live: an event still on its way reads it.
    """
    data = await asyncio.to_thread(path.read_bytes)
    media_type = detect_media_type(readable(path.name), data)
    body = _inline_text(data) if media_type in TEXT_TYPES else None
    as_text, as_upload = forms_of(options, path)
    if body is not None and not is_blank(body):
        await _publish_document(buckets, path, body, options)
        other, stored_as = as_upload, _upload_object(options, upload_id_for(options, path))
        may_exist = other in live or await _object_exists(buckets, stored_as)
    else:  # text it cannot send as such, or none: the indexer says why it cannot be read, as for any file
        await _publish_upload(buckets, path, data, media_type, options)
        other, stored_as = as_text, _body_object(options, as_text)
        may_exist = other in live or _may_hold_text(path)
    if may_exist:
        await _retract(buckets, other, stored_as if other in live else None, options)
    return media_type


async def _object_exists(buckets: Buckets, ref: ObjectRef) -> bool:
    try:
        await (await buckets.get(ref.bucket)).get_info(ref.name)
    except ObjectNotFoundError:
        return False
    return True


def _may_hold_text(path: Path) -> bool:
    """Whether the file's name allows text: a text extension, or one no extractor claims."""
    return BY_EXTENSION.get(readable(path.suffix).lower(), PLAIN_TEXT) in TEXT_TYPES


def _reason(exc: Exception) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror  # its str() names the file again
    if isinstance(exc, ValidationError):
        return brief(exc)
    return " ".join(str(exc).split()) or type(exc).__name__


def _report(path: Path, exc: Exception) -> None:
    """One line on standard error for a file that was not published (its name as the shell would show it)."""
    name = _file_bytes(str(path)).decode("utf-8", "backslashreplace")
    tqdm.write(f"error: {name}: {_reason(exc)}", file=sys.stderr)


async def ingest_files(nats_url: str, database_url: str, paths: list[Path], options: IngestOptions) -> int:
    """Publish each file; returns how many were published. A file that fails is one line on standard error
    and the next file goes on; a lost NATS connection, which every next file would meet, ends the run."""
    live = await live_forms(database_url, options, paths)
    nc = await connect_nats(nats_url)
    published = 0
    try:
        buckets = Buckets(nc.jetstream())
        for path in tqdm(paths, unit="file", disable=len(paths) < 10):
            try:
                await ingest_file(buckets, path, options, live)
            except (ConnectionClosedError, ConnectionReconnectingError) as exc:
                raise Unreachable(
                    f"lost the connection to NATS at {nats_url} after publishing {published} of {len(paths)} file(s)"
                ) from exc
            except Exception as exc:  # noqa: BLE001 -- one file's failure, said; the others still go
                _report(path, exc)
            else:
                published += 1
    finally:
        await disconnect(nc)
    return published
