"""The Object Store buckets that carry what is too large for an event: long document bodies and uploads.

A NATS message is at most the server's `max_payload` (1 MiB by default) with its headers, and a document
body may be 1 MiB of characters (up to 4 MiB as UTF-8): a body over `INLINE_BODY_LIMIT` bytes goes into
`cortex-bodies` and the event names it (`bodyRef`), as every publisher of KB events should do.
"""

from uuid import UUID

from nats.js import JetStreamContext
from nats.js.api import ObjectStoreConfig
from nats.js.errors import BucketNotFoundError
from nats.js.object_store import ObjectStore

from cortex_contracts.documents import ObjectRef

INLINE_BODY_LIMIT = 256 * 1024  # bytes of UTF-8; larger bodies go through the Object Store
BODY_BUCKET = "cortex-bodies"
UPLOAD_BUCKET = "cortex-uploads"
DESCRIPTIONS = {BODY_BUCKET: "Large KB document bodies", UPLOAD_BUCKET: "Uploaded files, as uploaded"}


class Buckets:
    """The Object Store buckets, each opened (or made) once: opening one asks the server for its stream's
    info, a request as dear as the upload itself for a small file."""

    def __init__(self, js: JetStreamContext) -> None:
        self.js = js
        self._opened: dict[str, ObjectStore] = {}

    async def get(self, name: str) -> ObjectStore:
        if name not in self._opened:
            try:
                self._opened[name] = await self.js.object_store(name)
            except BucketNotFoundError:
                self._opened[name] = await self.js.create_object_store(
                    name, ObjectStoreConfig(description=DESCRIPTIONS[name])
                )
        return self._opened[name]


async def stored_if_large(buckets: Buckets, organization_id: UUID, name: str, body: str) -> ObjectRef | None:
    """The body put into the body bucket under `<organizationId>/<name>` when it is too large to send inline,
    else None."""
    data = body.encode()
    if len(data) <= INLINE_BODY_LIMIT:
        return None
    ref = ObjectRef.owned(BODY_BUCKET, organization_id, name)
    await (await buckets.get(BODY_BUCKET)).put(ref.name, data)
    return ref
