"""Large bodies and uploaded files travel through the NATS Object Store; the event names the object.

An object is read as its metadata, then its chunks one by one by sequence number (`next_by_subj`), each
one request. nats-py's `ObjectStore.get` subscribes an ordered consumer for every object instead: a
consumer created and removed on the server, after a bucket lookup and the metadata read twice, which
was most of the NATS server's and much of the indexer's own work per file in bench/ingest --mix.
"""

import base64
import hashlib
from uuid import UUID

from nats.js import JetStreamContext
from nats.js.errors import NotFoundError, ObjectNotFoundError
from nats.js.object_store import (
    OBJ_CHUNKS_PRE_TEMPLATE,
    OBJ_DIGEST_TYPE,
    OBJ_STREAM_TEMPLATE,
    VALID_BUCKET_RE,
    ObjectStore,
)

from cortex_contracts.documents import MAX_BODY_CHARS, ObjectRef
from cortex_messaging.delivery import PoisonMessage


class UnreadableObject(Exception):
    """The object is not there, or is larger than the reader accepts: asking again will not change that.
    `kind` says which, as a failed document's reason begins."""

    kind = "missing"


class ForeignObject(UnreadableObject):
    """The event names an object outside its organization's names: refused before it is looked up, so that
    the answer says nothing about another organization's objects."""

    kind = "refused"


class ObjectTooLarge(UnreadableObject):
    kind = "too large"


class NotAFile(UnreadableObject):
    kind = "unsupported"


class DamagedObject(UnreadableObject):
    kind = "corrupt"


async def read_bytes(js: JetStreamContext, ref: ObjectRef, *, owner: UUID, max_bytes: int) -> bytes:
    """The object's bytes, if it is `owner`'s (named `<owner>/…`)."""
    if not ref.owned_by(owner):
        raise ForeignObject(
            f"object {ref.bucket}/{ref.name} is not this organization's: its name must start with {owner}/"
        )
    if VALID_BUCKET_RE.match(ref.bucket) is None:
        raise ForeignObject(f"object store bucket name {ref.bucket!r} is not valid")
    stream = OBJ_STREAM_TEMPLATE.format(bucket=ref.bucket)
    try:
        info = await ObjectStore(ref.bucket, stream, js).get_info(ref.name)  # a missing bucket: not found too
    except ObjectNotFoundError as exc:
        raise UnreadableObject(f"object {ref.bucket}/{ref.name} not found") from exc
    if info.is_link():
        raise NotAFile(f"object {ref.bucket}/{ref.name} is a link, not a file")
    if (info.size or 0) > max_bytes:
        raise ObjectTooLarge(f"object {ref.bucket}/{ref.name} is over {max_bytes // 2**20} MiB")
    subject = OBJ_CHUNKS_PRE_TEMPLATE.format(bucket=ref.bucket, obj=info.nuid)
    data = bytearray()
    digest = hashlib.sha256()
    sequence = 1
    for _ in range(info.chunks or 0):
        try:
            chunk = await js.get_msg(stream, seq=sequence, subject=subject, next=True)
        except NotFoundError as exc:
            raise UnreadableObject(f"object {ref.bucket}/{ref.name} has lost chunks") from exc
        data += chunk.data or b""
        digest.update(chunk.data or b"")
        sequence = (chunk.seq or sequence) + 1
        if len(data) > max_bytes:
            raise ObjectTooLarge(f"object {ref.bucket}/{ref.name} is over {max_bytes // 2**20} MiB")
    if len(data) != (info.size or 0) or digest.digest() != _recorded_digest(info.digest):
        raise DamagedObject(f"object {ref.bucket}/{ref.name} does not match its size and digest")
    return bytes(data)


def _recorded_digest(digest: str | None) -> bytes | None:
    """The SHA-256 the metadata records (`SHA-256=<base64url>`), None when it records none we can read."""
    encoded = (digest or "").removeprefix(OBJ_DIGEST_TYPE).removeprefix(OBJ_DIGEST_TYPE.upper())
    try:
        return base64.urlsafe_b64decode(encoded) if encoded else None
    except ValueError:
        return None


async def read_body(js: JetStreamContext, ref: ObjectRef, *, owner: UUID) -> str:
    try:  # UTF-8 takes at most 4 bytes a character
        data = await read_bytes(js, ref, owner=owner, max_bytes=4 * MAX_BODY_CHARS)
    except UnreadableObject as exc:
        raise PoisonMessage(f"body {exc}") from exc
    try:
        body = data.decode()
    except UnicodeDecodeError as exc:
        raise PoisonMessage(f"body object {ref.bucket}/{ref.name} is not UTF-8 text") from exc
    if len(body) > MAX_BODY_CHARS:
        raise PoisonMessage(f"body object {ref.bucket}/{ref.name} is over {MAX_BODY_CHARS} characters")
    return body
