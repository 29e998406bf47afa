"""Large bodies and uploaded files travel through the NATS Object Store; the event names the object."""

from nats.js import JetStreamContext
from nats.js.errors import BucketNotFoundError, ObjectNotFoundError

from cortex_contracts.documents import MAX_BODY_CHARS, ObjectRef
from cortex_messaging.delivery import PoisonMessage


class UnreadableObject(Exception):
    """The object is not there, or is larger than the reader accepts: asking again will not change that."""


async def read_bytes(js: JetStreamContext, ref: ObjectRef, *, max_bytes: int) -> bytes:
    try:
        store = await js.object_store(ref.bucket)
        info = await store.get_info(ref.name)
        if (info.size or 0) > max_bytes:
            raise UnreadableObject(f"object {ref.bucket}/{ref.name} is over {max_bytes // 2**20} MiB")
        result = await store.get(ref.name)
    except (BucketNotFoundError, ObjectNotFoundError) as exc:
        raise UnreadableObject(f"object {ref.bucket}/{ref.name} not found") from exc
    return result.data or b""


async def read_body(js: JetStreamContext, ref: ObjectRef) -> str:
    try:
        data = await read_bytes(js, ref, max_bytes=4 * MAX_BODY_CHARS)  # UTF-8 takes at most 4 bytes a character
    except UnreadableObject as exc:
        raise PoisonMessage(f"body {exc}") from exc
    try:
        body = data.decode()
    except UnicodeDecodeError as exc:
        raise PoisonMessage(f"body object {ref.bucket}/{ref.name} is not UTF-8 text") from exc
    if len(body) > MAX_BODY_CHARS:
        raise PoisonMessage(f"body object {ref.bucket}/{ref.name} is over {MAX_BODY_CHARS} characters")
    return body
