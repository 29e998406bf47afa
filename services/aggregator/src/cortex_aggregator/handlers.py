"""Entry point for `rpc.aggregator.feed`: bytes in, one `FeedReply` out, whatever happens."""

import logging
from collections.abc import Awaitable, Callable

from pydantic import ValidationError

from cortex_aggregator.cursor import BadCursor
from cortex_aggregator.feed import FeedContext, feed
from cortex_contracts.rpc import FeedReply, FeedRequest, RpcError

log = logging.getLogger(__name__)


def make_feed_handler(ctx: FeedContext) -> Callable[[bytes], Awaitable[bytes]]:
    async def handle(payload: bytes) -> bytes:
        try:
            request = FeedRequest.model_validate_json(payload)
            reply = FeedReply(result=await feed(ctx, request))
        except ValidationError as exc:
            reply = FeedReply(error=RpcError(status=400, title="Invalid request", detail=str(exc)[:2000]))
        except BadCursor as exc:
            reply = FeedReply(error=RpcError(status=400, title="Invalid cursor", detail=str(exc)))
        except Exception:
            log.exception("feed request failed")
            reply = FeedReply(error=RpcError(status=500, title="Internal error", detail="the feed could not be read"))
        return reply.to_wire()

    return handle
