"""A reply too large for NATS is replaced by the error the service gives, sent at once.

nats-py refuses to send a message over the server's max_payload. The aggregator's reply to an item's
detail carries the whole body; against a NATS left at its default max_payload (1 MiB) a large document's
reply was refused, and the gateway waited out its timeout (504) with no reason given.
"""

import uuid

import pytest
from nats.aio.client import Client as NATS

from cortex_aggregator.handlers import reply_too_large
from cortex_contracts.rpc import ItemReply
from cortex_messaging import rpc

pytestmark = pytest.mark.e2e


async def test_the_oversized_reply_is_sent_instead_at_once(nats_client: NATS) -> None:
    subject = f"tests.rpc.{uuid.uuid4().hex}"
    limit = nats_client.max_payload

    async def too_much(_payload: bytes) -> bytes:
        return b"x" * (limit + 1)

    subscription = await rpc.serve(
        nats_client, subject, "tests", too_much, oversized=lambda size, most: f"{size} > {most}".encode()
    )
    try:
        reply = await rpc.request(nats_client, subject, b"{}", timeout=5)
    finally:
        await subscription.unsubscribe()

    assert reply == f"{limit + 1} > {limit}".encode()
    assert nats_client.is_connected


def test_the_aggregators_oversized_reply_is_an_error_naming_the_limit() -> None:
    reply = ItemReply.model_validate_json(reply_too_large(5_000_000, 1_048_576))

    assert reply.result is None
    assert reply.error is not None
    assert reply.error.status == 500  # the gateway answers 502 with this detail
    assert "5000000 bytes" in reply.error.detail
    assert "max_payload: 8MB" in reply.error.detail
    # A NATS that already carries 8 MB is not sent to a setting it has (QA 36).
    at_eight = ItemReply.model_validate_json(reply_too_large(9_000_000, 8 * 1024 * 1024))
    assert at_eight.error is not None
    assert (
        at_eight.error.detail
        == "The reply is 9000000 bytes, over the 8388608 bytes NATS carries in one message: ask for fewer results."
    )
