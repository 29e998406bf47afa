"""Liveness and readiness."""

import asyncio

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse
from sqlalchemy import text

from cortex_gateway.auth import ResourcesDep
from cortex_gateway.strict_query import refuse_unknown_query

router = APIRouter(tags=["health"], dependencies=[Depends(refuse_unknown_query)])


# HEAD too, for load balancers and uptime monitors that probe with it, as every GET route (head_requests.py).
@router.get("/healthz", summary="The process is up")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz", summary="NATS and PostgreSQL both answer", responses={503: {"description": "Not ready"}})
async def readyz(res: ResourcesDep) -> JSONResponse:
    checks = {"nats": False, "postgres": False}
    try:  # a round trip: a NATS that holds the connection but answers nothing is not ready (QA 46)
        await res.nc.flush(timeout=2)
        checks["nats"] = res.nc.is_connected
    except Exception:  # noqa: BLE001 — any failure means not ready
        checks["nats"] = False
    try:
        async with asyncio.timeout(2), res.engine.connect() as connection:
            await connection.execute(text("SELECT 1"))
        checks["postgres"] = True
    except Exception:  # noqa: BLE001 — any failure means not ready
        checks["postgres"] = False
    ready = all(checks.values())
    return JSONResponse(
        {"status": "ready" if ready else "not ready", "checks": checks}, status_code=200 if ready else 503
    )
