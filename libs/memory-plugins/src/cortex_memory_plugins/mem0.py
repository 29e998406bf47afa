"""The `mem0` memory plugin: reads agent memory from a mem0 server's REST API (`POST /search`,
`GET /memories`), best effort within a hard time budget.

Namespaces. mem0 keys memories by `user_id`, `agent_id` and `run_id`; Cortex's map onto them so:
- the organization → `user_id` = the organization's id (always sent: one org never reads another's),
- a Work → `run_id` = the Work's id (a Work is the long-lived run an agent's memories belong to),
- an agent → `agent_id` = the Cortex `agentId`, unchanged.
An agent writing to mem0 for Cortex to read uses the same three values.

Enabled when `CORTEX_MEM0_URL` is set (settings below, prefix `CORTEX_MEM0_`).
"""

import asyncio
import time
from datetime import datetime
from typing import Any

import httpx
from opentelemetry.metrics import Meter
from pydantic import Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from cortex_contracts.memory import (
    ExternalMemories,
    ExternalMemory,
    ExternalMemoryFailure,
    ExternalSourceStatus,
    MemoryNamespace,
)
from cortex_contracts.plugins import PluginNotConfigured
from cortex_memory_plugins.failures import FailureRecorder
from cortex_memory_plugins.fencing import fence

NAME = "mem0"


class Mem0Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CORTEX_MEM0_", env_file=".env", extra="ignore")

    url: str | None = Field(default=None, description="The mem0 server's base URL; unset: the plugin is off.")
    api_key: SecretStr | None = Field(default=None, description="Sent as `Authorization: Token <key>`.")
    timeout_seconds: float = Field(default=0.3, gt=0, le=30, description="Whole-call budget, connect included.")


def namespace_params(namespace: MemoryNamespace) -> dict[str, str]:
    params = {"user_id": str(namespace.organization_id)}
    if namespace.work_id is not None:
        params["run_id"] = str(namespace.work_id)
    if namespace.agent_id is not None:
        params["agent_id"] = namespace.agent_id
    return params


class _Failed(Exception):
    def __init__(self, reason: ExternalMemoryFailure, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason


def _created_at(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def _memory(raw: Any) -> ExternalMemory | None:
    """One mem0 record (`id`, `memory`, optional `score`, `metadata`, `agent_id`, `run_id`, `created_at`)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("memory"), str) or raw.get("id") is None:
        return None
    score, metadata = raw.get("score"), raw.get("metadata")
    try:
        return ExternalMemory(
            source=NAME,
            id=str(raw["id"]),
            content=raw["memory"],
            fenced=fence(NAME, raw["memory"]),
            score=float(score) if isinstance(score, int | float) else None,
            agent_id=raw.get("agent_id") if isinstance(raw.get("agent_id"), str) else None,
            run_id=raw.get("run_id") if isinstance(raw.get("run_id"), str) else None,
            metadata=metadata if isinstance(metadata, dict) else None,
            created_at=_created_at(raw.get("created_at")),
        )
    except ValidationError:
        return None


def _records(body: Any) -> list[Any]:
    """mem0 answers `{"results": [...]}` (API v1.1) or a bare list (v1.0)."""
    if isinstance(body, dict) and isinstance(body.get("results"), list):
        return list(body["results"])
    if isinstance(body, list):
        return body
    raise _Failed(ExternalMemoryFailure.BAD_RESPONSE, f"unexpected body: {str(body)[:200]}")


class Mem0Memory:
    """Reads a mem0 server. Never raises into the request path: each failure is counted, logged, and
    answered as an empty result with the reason."""

    name = NAME

    def __init__(self, settings: Mem0Settings, meter: Meter | None = None) -> None:
        if not settings.url:
            raise PluginNotConfigured("CORTEX_MEM0_URL is not set")
        self.timeout = settings.timeout_seconds
        headers = {"Authorization": f"Token {settings.api_key.get_secret_value()}"} if settings.api_key else {}
        self.client = httpx.AsyncClient(
            base_url=settings.url.rstrip("/"), headers=headers, timeout=httpx.Timeout(self.timeout)
        )
        self.failures = FailureRecorder(NAME, meter)

    async def search(self, namespace: MemoryNamespace, query: str, limit: int) -> ExternalMemories:
        body = {"query": query, "limit": limit, **namespace_params(namespace)}
        return await self._call("search", self.client.build_request("POST", "/search", json=body), limit)

    async def list_memories(self, namespace: MemoryNamespace, limit: int) -> ExternalMemories:
        params = {**namespace_params(namespace), "limit": str(limit)}
        return await self._call("list", self.client.build_request("GET", "/memories", params=params), limit)

    async def health(self) -> str | None:
        """None when the server answers a listing within the budget, else why not."""
        probe = MemoryNamespace.model_validate({"organizationId": "00000000-0000-0000-0000-000000000000"})
        result = await self.list_memories(probe, 1)
        return None if result.status.ok else f"mem0 at {self.client.base_url}: {result.status.reason}"

    async def aclose(self) -> None:
        await self.client.aclose()

    async def _call(self, operation: str, request: httpx.Request, limit: int) -> ExternalMemories:
        started = time.monotonic()
        try:
            async with asyncio.timeout(self.timeout):  # httpx's timeout is per phase; this bounds the whole call
                records = await self._send(request)
        except _Failed as failed:
            return self._failed(operation, failed.reason, started, str(failed))
        except TimeoutError:
            return self._failed(operation, ExternalMemoryFailure.TIMEOUT, started, "no answer within the budget")
        except httpx.TimeoutException as exc:
            return self._failed(operation, ExternalMemoryFailure.TIMEOUT, started, repr(exc))
        except httpx.HTTPError as exc:
            return self._failed(operation, ExternalMemoryFailure.UNAVAILABLE, started, repr(exc))
        except Exception as exc:  # noqa: BLE001 — best effort: nothing from a backend may fail the page
            return self._failed(operation, ExternalMemoryFailure.UNAVAILABLE, started, repr(exc))
        items = [memory for memory in map(_memory, records) if memory is not None][:limit]
        return ExternalMemories(items=items, status=ExternalSourceStatus(source=NAME, ok=True))

    async def _send(self, request: httpx.Request) -> list[Any]:
        response = await self.client.send(request)
        status = response.status_code
        if status == 404:
            raise _Failed(ExternalMemoryFailure.NOT_FOUND, f"{request.method} {request.url.path}: 404")
        if status >= 500:
            raise _Failed(ExternalMemoryFailure.SERVER_ERROR, f"{request.method} {request.url.path}: {status}")
        if status >= 400:
            raise _Failed(ExternalMemoryFailure.CLIENT_ERROR, f"{request.method} {request.url.path}: {status}")
        try:
            body = response.json()
        except ValueError as exc:
            raise _Failed(ExternalMemoryFailure.BAD_RESPONSE, f"not JSON: {exc}") from exc
        return _records(body)

    def _failed(self, operation: str, reason: ExternalMemoryFailure, started: float, detail: str) -> ExternalMemories:
        self.failures.record(operation, reason, time.monotonic() - started, detail)
        return ExternalMemories(items=[], status=ExternalSourceStatus(source=NAME, ok=False, reason=reason))


def create() -> Mem0Memory:
    """Entry point (`cortex.memory` group): the plugin configured from `CORTEX_MEM0_*`."""
    return Mem0Memory(Mem0Settings())
