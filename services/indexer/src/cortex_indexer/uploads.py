"""`kb.<org>.upload.created`: fetch the file from the Object Store, extract its text, index it as a document.

A file that cannot be read — unsupported, corrupt, encrypted, too large, or gone — still becomes a
document: stored with status `failed` and the reason, and the caller reports it to the dead-letter stream.
It is never dropped, and never retried (the bytes will not change).
"""

from dataclasses import dataclass
from pathlib import PurePath

from nats.js import JetStreamContext

from cortex_contracts.base import is_blank
from cortex_contracts.documents import UNTITLED, DocumentIndexed, DocumentUpserted
from cortex_contracts.uploads import UploadCreated, upload_document_id
from cortex_extractors import ExtractionError, detect_media_type, media_types, supported_media_types
from cortex_extractors.errors import EmptyFile
from cortex_extractors.limits import MAX_INPUT_BYTES
from cortex_extractors.media_types import normalize, signed_media_type
from cortex_indexer.extraction_workers import ExtractionWorkers, WorkerFailed
from cortex_indexer.indexing import EventMeta, IndexingContext, index_document, prior_embeddings
from cortex_indexer.object_bodies import UnreadableObject, read_bytes
from cortex_messaging.delivery import PoisonMessage

SOURCE = "upload"
MAX_TITLE_CHARS = 300
NO_TEXT = EmptyFile().summary  # empty: the file holds no text
NO_TEXT_IN_PDF = f"{NO_TEXT} (a scanned PDF or an image needs OCR first)"


@dataclass(frozen=True)
class UploadIndexed:
    indexed: DocumentIndexed | None  # None: a duplicate, or older than what is stored
    failure_reason: str | None  # set when the document was stored as failed


@dataclass(frozen=True)
class _Text:
    title: str | None
    body: str
    failure_reason: str | None


def _media_type(upload: UploadCreated, data: bytes) -> str:
    """What the bytes prove (a PDF header, an OOXML package: a DOCX sent as `application/pdf` is read as
    a DOCX), else the declared type when an extractor reads it, else what the bytes and the name say."""
    signed = signed_media_type(data)
    if signed is not None:
        return signed
    declared = normalize(upload.media_type)
    return declared if declared in supported_media_types() else detect_media_type(upload.filename, data)


def _reason(exc: UnreadableObject | ExtractionError) -> str:
    if isinstance(exc, ExtractionError):
        return exc.summary
    return f"{exc.kind}: {exc}"


async def _text(js: JetStreamContext, workers: ExtractionWorkers, upload: UploadCreated, *, final: bool) -> _Text:
    """The file's text, or why there is none. `final`: the event's last delivery."""
    if upload.size_bytes > MAX_INPUT_BYTES:
        return _Text(None, "", f"too large: the file is over {MAX_INPUT_BYTES // 2**20} MiB")
    if upload.object is None:
        return _Text(None, "", "missing: the event names no object holding the file")
    try:
        async with workers.turn() as extract:  # fetched in the turn: at most `workers` files held in memory
            data = await read_bytes(js, upload.object, owner=upload.organization_id, max_bytes=MAX_INPUT_BYTES)
            kind = _media_type(upload, data)
            extracted = await extract(kind, data, upload.filename)
    except (UnreadableObject, ExtractionError) as exc:
        return _Text(None, "", _reason(exc))
    except WorkerFailed as exc:
        if not final:
            raise  # not known to be the file's fault (the OOM killer, a crash beside it): tried again
        return _Text(None, "", f"unreadable: {exc}, at every try")
    if is_blank(extracted.text):  # nothing to find it by: say so, rather than list a blank document
        return _Text(extracted.title, "", NO_TEXT_IN_PDF if kind == media_types.PDF else NO_TEXT)
    return _Text(extracted.title, extracted.text, None)


def _title(extracted: str | None, filename: str) -> str:
    """The file's own title (without NULs, which PostgreSQL text cannot hold: a PDF's metadata may have
    them), else its name, else `UNTITLED`: a document's title must not be blank."""
    for candidate in (extracted or "", PurePath(filename).stem, filename):
        title = candidate.replace("\x00", "")[:MAX_TITLE_CHARS]
        if not is_blank(title):
            return title
    return UNTITLED


async def index_upload(
    ctx: IndexingContext,
    js: JetStreamContext,
    workers: ExtractionWorkers,
    meta: EventMeta,
    upload: UploadCreated,
    *,
    final: bool = False,
) -> UploadIndexed:
    """Index the uploaded file as one document (source `upload`), or store that document as failed.
    `final`: the event's last delivery, where a worker that died reading the file fails the file."""
    if upload.organization_id != meta.organization_id:
        raise PoisonMessage("payload organizationId differs from the event's orgid")
    document_id = upload_document_id(upload.upload_id)
    version = upload.version if upload.version is not None else int(meta.time.timestamp() * 1_000_000)
    known = await prior_embeddings(ctx, meta, document_id, version)  # before the file is fetched and read
    if known is None:
        return UploadIndexed(None, None)
    text = await _text(js, workers, upload, final=final)
    doc = DocumentUpserted(
        document_id=document_id,
        organization_id=upload.organization_id,
        work_id=upload.work_id,
        title=_title(text.title, upload.filename),
        doc_class=upload.doc_class,
        tags=upload.tags,
        source=SOURCE,
        version=version,
        updated_at=meta.time,
        upload_id=upload.upload_id,
    )
    indexed = await index_document(
        ctx, meta, doc, text.body, upload=upload, failure_reason=text.failure_reason, known=known
    )
    return UploadIndexed(indexed, text.failure_reason if indexed is not None else None)
