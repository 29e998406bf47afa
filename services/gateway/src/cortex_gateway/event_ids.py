"""Ids of the events the gateway publishes for a request: the same request, the same id, which nobody
outside can predict.

The same id makes twins one event: JetStream drops a copy within its dedup window (the id is the
message's `Nats-Msg-Id`), the indexer's inbox a later one. But the dedup window is one per stream,
across organizations: an id predictable from an entry's or a note's id (itself derived from its content
or an idempotency key) would let a publisher of another organization, sending first under that id,
have this one dropped. Keyed with the gateway's secret, the id is stable for us and unguessable for them.
"""

import hashlib
import hmac
import uuid


def event_id(secret: str, kind: str, organization_id: uuid.UUID, subject_id: uuid.UUID) -> str:
    message = f"{kind}/{organization_id}/{subject_id}".encode()
    return f"{kind}-{hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()[:32]}"
