"""Ask the aggregator over NATS request/reply; turn its failures into problem details.

`ask_aggregator` returns the reply's result as a model, for routes that look at it. Routes that only
hand the result to the client use `relay_aggregator`: the aggregator already sends it as the API
does (wire names, unset optionals left out), so the gateway validates those bytes against the result
model and passes them on, instead of building models only to serialise them again.
"""

from typing import Any

from fastapi.responses import Response
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError
from pydantic import ValidationError

from cortex_contracts.base import WireModel
from cortex_contracts.rpc import Reply
from cortex_gateway.problems import Problem
from cortex_gateway.resources import Resources
from cortex_messaging import rpc

JSON = "application/json"
RESULT_PREFIX = b'{"result":'


async def _ask(res: Resources, subject: str, request: WireModel) -> bytes:
    try:
        return await rpc.request(res.nc, subject, request.to_wire(), timeout=res.settings.rpc_timeout_seconds)
    except NoRespondersError as exc:
        raise Problem(503, "The search service is not running.", headers={"Retry-After": "5"}) from exc
    except NatsTimeoutError as exc:
        raise Problem(504, "The search service did not answer in time.") from exc


def reply_result(payload: bytes, reply_model: type[Reply[Any]]) -> Any:
    """The reply's result; its error as a problem."""
    reply = reply_model.model_validate_json(payload)
    if reply.error is not None:
        if reply.error.status == 503:  # the aggregator's database is down: the request may be made again
            raise Problem(503, reply.error.detail, headers={"Retry-After": "5"})
        status = reply.error.status if 400 <= reply.error.status < 500 else 502
        raise Problem(status, reply.error.detail)  # titled by its status, as every `about:blank` problem
    if reply.result is None:
        raise Problem(502, "The search service sent an empty reply.")
    return reply.result


def result_json(payload: bytes, reply_model: type[Reply[Any]], result_model: type[WireModel]) -> bytes:
    """The reply's result as the API's JSON body; its error as a problem.

    A reply that is exactly `{"result":<R>}` (as `Reply.to_wire` writes it) gives `<R>` itself, once it
    validates as `result_model` strictly and by wire names only: then `<R>` is one JSON document in
    the very form the API documents (a second key or anything else after `<R>` makes it invalid JSON).
    Any other reply is read whole and its result serialised afresh.
    """
    if payload.startswith(RESULT_PREFIX) and payload.endswith(b"}"):
        result = payload[len(RESULT_PREFIX) : -1]
        try:
            result_model.model_validate_json(result, strict=True, by_alias=True, by_name=False)
        except ValidationError:
            pass
        else:
            return result
    model: WireModel = reply_result(payload, reply_model)
    return model.model_dump_json(by_alias=True, exclude_none=True).encode()


async def ask_aggregator(res: Resources, subject: str, request: WireModel, reply_model: type[Reply[Any]]) -> Any:
    return reply_result(await _ask(res, subject, request), reply_model)


async def relay_aggregator(
    res: Resources, subject: str, request: WireModel, reply_model: type[Reply[Any]], result_model: type[WireModel]
) -> Response:
    """The aggregator's result as the response (200, JSON). The route keeps `response_model=result_model`,
    so the OpenAPI document describes it as before."""
    return Response(result_json(await _ask(res, subject, request), reply_model, result_model), media_type=JSON)
