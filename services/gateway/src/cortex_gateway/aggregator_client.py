"""Ask the aggregator over NATS request/reply; turn its failures into problem details."""

from typing import Any

from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError

from cortex_contracts.base import WireModel
from cortex_contracts.rpc import Reply
from cortex_gateway.problems import Problem
from cortex_gateway.resources import Resources
from cortex_messaging import rpc


async def ask_aggregator(res: Resources, subject: str, request: WireModel, reply_model: type[Reply[Any]]) -> Any:
    try:
        payload = await rpc.request(res.nc, subject, request.to_wire(), timeout=res.settings.rpc_timeout_seconds)
    except NoRespondersError as exc:
        raise Problem(503, "The search service is not running.", headers={"Retry-After": "5"}) from exc
    except NatsTimeoutError as exc:
        raise Problem(504, "The search service did not answer in time.") from exc
    reply = reply_model.model_validate_json(payload)
    if reply.error is not None:
        status = reply.error.status if 400 <= reply.error.status < 500 else 502
        raise Problem(status, reply.error.detail, title=reply.error.title)
    if reply.result is None:
        raise Problem(502, "The search service sent an empty reply.")
    return reply.result
