"""Entry points for `rpc.aggregator.*`: bytes in, one reply out, whatever happens.

Connections are taken from the pools without a pre-ping (three round trips each). A connection the
server closed since (a restart, an idle timeout) fails its statement instead; SQLAlchemy then discards
its pool's stale connections (asyncpg's pool, of searches, replaces a closed one on its own), and the
request — every one is a read — is worked once more.
"""

import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from sqlalchemy.exc import DBAPIError

from cortex_aggregator.cursor import BadCursor
from cortex_aggregator.detail import ItemNotFound
from cortex_contracts.rpc import Reply, RpcError
from cortex_store.database import CONNECTION_LOST, unreachable

log = logging.getLogger(__name__)

Request = TypeVar("Request", bound=BaseModel)

DATABASE_UNREACHABLE = "The database is not reachable; try again."


def rpc_handler(
    request_model: type[Request],
    reply_model: type[Reply[Any]],
    work: Callable[[Request], Awaitable[Any]],
) -> Callable[[bytes], Awaitable[bytes]]:
    async def work_once_more_if_disconnected(request: Request) -> Any:
        try:
            return await work(request)
        except DBAPIError as exc:
            if not exc.connection_invalidated:
                raise
            return await work(request)
        except CONNECTION_LOST:
            return await work(request)

    async def handle(payload: bytes) -> bytes:
        try:
            reply = reply_model(result=await work_once_more_if_disconnected(request_model.model_validate_json(payload)))
        except ValidationError as exc:
            reply = reply_model(error=RpcError(status=400, title="Invalid request", detail=str(exc)[:2000]))
        except BadCursor as exc:
            reply = reply_model(error=RpcError(status=400, title="Invalid cursor", detail=str(exc)))
        except ItemNotFound:
            reply = reply_model(error=RpcError(status=404, title="Not found", detail="No such item."))
        except Exception as exc:
            if unreachable(exc):  # not a fault of the request nor of the aggregator: the caller may try again
                log.warning("%s: PostgreSQL cannot be reached: %r", request_model.__name__, exc)
                reply = reply_model(error=RpcError(status=503, title="Unavailable", detail=DATABASE_UNREACHABLE))
            else:
                log.exception("%s failed", request_model.__name__)
                reply = reply_model(error=RpcError(status=500, title="Internal error", detail="the request failed"))
        try:
            return reply.to_wire()
        except Exception:  # e.g. text with a lone surrogate (no UTF-8), or nested too deep to serialise
            log.exception("%s: the reply cannot be serialised", request_model.__name__)
            failed = reply_model(error=RpcError(status=500, title="Internal error", detail="the reply cannot be sent"))
            return failed.to_wire()

    return handle


EMBEDDED_MAX_PAYLOAD = 8 * 1024 * 1024  # what the embedded NATS runs with


def reply_too_large(size: int, max_payload: int) -> bytes:
    """The error sent instead of a reply NATS cannot carry (rpc.serve's `oversized`)."""
    detail = (
        f"The reply is {size} bytes, over the {max_payload} bytes NATS carries in one message: ask for fewer results"
    )
    if max_payload < EMBEDDED_MAX_PAYLOAD:  # a NATS of the operator's own, with less than Cortex expects
        detail += ", or set max_payload: 8MB on the NATS server (see the README)"
    detail += "."
    return Reply[Any](error=RpcError(status=500, title="Reply too large", detail=detail)).to_wire()
