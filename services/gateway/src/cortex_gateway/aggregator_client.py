"""Ask the aggregator over NATS request/reply; turn its failures into problem details."""

from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError

from cortex_contracts.rpc import FeedPage, FeedReply, FeedRequest
from cortex_contracts.subjects import RPC_AGGREGATOR_FEED
from cortex_gateway.problems import Problem
from cortex_gateway.resources import Resources
from cortex_messaging import rpc


async def request_feed(res: Resources, request: FeedRequest) -> FeedPage:
    try:
        payload = await rpc.request(
            res.nc, RPC_AGGREGATOR_FEED, request.to_wire(), timeout=res.settings.rpc_timeout_seconds
        )
    except NoRespondersError as exc:
        raise Problem(503, "The search service is not running.", headers={"Retry-After": "5"}) from exc
    except NatsTimeoutError as exc:
        raise Problem(504, "The search service did not answer in time.") from exc
    reply = FeedReply.model_validate_json(payload)
    if reply.error is not None:
        status = reply.error.status if 400 <= reply.error.status < 500 else 502
        raise Problem(status, reply.error.detail, title=reply.error.title)
    if reply.result is None:
        raise Problem(502, "The search service sent an empty reply.")
    return reply.result
