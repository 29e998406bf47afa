"""Bodies too large for an event travel through the NATS Object Store; the event names the object."""

from nats.js import JetStreamContext
from nats.js.errors import BucketNotFoundError, ObjectNotFoundError

from cortex_contracts.documents import MAX_BODY_CHARS, ObjectRef
from cortex_messaging.delivery import PoisonMessage


async def read_body(js: JetStreamContext, ref: ObjectRef) -> str:
    try:
        store = await js.object_store(ref.bucket)
        result = await store.get(ref.name)
    except (BucketNotFoundError, ObjectNotFoundError) as exc:
        raise PoisonMessage(f"body object {ref.bucket}/{ref.name} not found") from exc
    data = result.data or b""
    try:
        body = data.decode()
    except UnicodeDecodeError as exc:
        raise PoisonMessage(f"body object {ref.bucket}/{ref.name} is not UTF-8 text") from exc
    if len(body) > MAX_BODY_CHARS:
        raise PoisonMessage(f"body object {ref.bucket}/{ref.name} is over {MAX_BODY_CHARS} characters")
    return body
