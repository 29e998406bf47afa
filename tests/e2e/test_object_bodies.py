"""Reading objects from the real NATS Object Store, chunk by chunk, as the indexer reads uploads and bodies."""

import base64
import hashlib
import json
import uuid

import pytest
from nats.js import JetStreamContext
from nats.js.api import ObjectStoreConfig
from nats.js.object_store import ObjectStore

from cortex_contracts.documents import ObjectRef
from cortex_indexer.object_bodies import ForeignObject, UnreadableObject, read_bytes

pytestmark = pytest.mark.e2e

MIB = 2**20
OWNER = uuid.uuid4()


def ref(bucket: str, name: str) -> ObjectRef:
    return ObjectRef.owned(bucket, OWNER, name)


@pytest.fixture
async def bucket(js: JetStreamContext) -> ObjectStore:
    return await js.create_object_store(f"test-{uuid.uuid4().hex[:12]}", ObjectStoreConfig())


async def test_an_object_of_several_chunks_reads_back_whole(js: JetStreamContext, bucket: ObjectStore) -> None:
    data = bytes(range(256)) * 1200  # 300 KiB: three chunks of nats-py's 128 KiB
    await bucket.put(f"{OWNER}/big", data)
    await bucket.put(f"{OWNER}/empty", b"")
    await bucket.put(f"{OWNER}/small", b"one chunk")

    assert await read_bytes(js, ref(bucket._name, "big"), owner=OWNER, max_bytes=MIB) == data
    assert await read_bytes(js, ref(bucket._name, "empty"), owner=OWNER, max_bytes=MIB) == b""
    assert await read_bytes(js, ref(bucket._name, "small"), owner=OWNER, max_bytes=MIB) == b"one chunk"


async def test_a_replaced_object_reads_as_its_new_content(js: JetStreamContext, bucket: ObjectStore) -> None:
    await bucket.put(f"{OWNER}/doc", b"first version")
    await bucket.put(f"{OWNER}/doc", b"second version")
    assert await read_bytes(js, ref(bucket._name, "doc"), owner=OWNER, max_bytes=MIB) == b"second version"


@pytest.mark.parametrize(
    ("bucket_name", "name", "kind", "reason"),
    [
        (None, "nothing-here", "missing", "not found"),
        ("no-such-bucket", "x", "missing", "not found"),
        ("bad bucket name!", "x", "refused", "is not valid"),
        (None, "big", "too large", "is over 0 MiB"),  # before: "missing", as every unreadable object
    ],
)
async def test_what_cannot_be_read_says_why(
    js: JetStreamContext, bucket: ObjectStore, bucket_name: str | None, name: str, kind: str, reason: str
) -> None:
    await bucket.put(f"{OWNER}/big", b"x" * 2048)
    with pytest.raises(UnreadableObject, match=reason) as refused:
        await read_bytes(js, ref(bucket_name or bucket._name, name), owner=OWNER, max_bytes=1024)
    assert refused.value.kind == kind  # how a failed upload's reason begins


async def test_content_that_does_not_match_its_recorded_digest_is_refused(
    js: JetStreamContext, bucket: ObjectStore
) -> None:
    await bucket.put(f"{OWNER}/doc", b"the bytes as written")
    stream = f"OBJ_{bucket._name}"
    meta_subject = f"$O.{bucket._name}.M.{base64.urlsafe_b64encode(f'{OWNER}/doc'.encode()).decode()}"
    meta = json.loads((await js.get_last_msg(stream, meta_subject)).data or b"{}")
    meta["digest"] = "SHA-256=" + base64.urlsafe_b64encode(hashlib.sha256(b"other bytes").digest()).decode()
    await js.publish(meta_subject, json.dumps(meta).encode(), headers={"Nats-Rollup": "sub"})

    with pytest.raises(UnreadableObject, match="does not match its size and digest"):
        await read_bytes(js, ref(bucket._name, "doc"), owner=OWNER, max_bytes=MIB)


async def test_an_object_outside_the_organizations_names_is_refused_before_it_is_looked_up(
    js: JetStreamContext, bucket: ObjectStore
) -> None:
    other = uuid.uuid4()
    await bucket.put(f"{other}/report", b"another organization's file")
    for name in (f"{other}/report", "report", f"x{OWNER}/report"):
        with pytest.raises(ForeignObject, match=f"must start with {OWNER}/"):
            await read_bytes(js, ObjectRef(bucket=bucket._name, name=name), owner=OWNER, max_bytes=MIB)
    with pytest.raises(ForeignObject):  # the same answer where nothing is stored: it tells nothing
        await read_bytes(js, ObjectRef(bucket="no-such-bucket", name=f"{other}/x"), owner=OWNER, max_bytes=MIB)
