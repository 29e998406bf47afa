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
import json
import math
import time
from datetime import UTC, datetime
from itertools import islice
from typing import Any

import httpx
from opentelemetry.metrics import Meter
from pydantic import Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from cortex_contracts.json_metadata import checked_metadata
from cortex_contracts.memory import (
    MAX_ENTRY_CHARS,
    ExternalMemories,
    ExternalMemory,
    ExternalMemoryFailure,
    ExternalSourceStatus,
    MemoryNamespace,
)
from cortex_contracts.plugins import PluginNotConfigured
from cortex_contracts.settings_values import HttpUrl
from cortex_memory_plugins.failures import FailureRecorder
from cortex_memory_plugins.fencing import fence

NAME = "mem0"
MAX_ID_CHARS = 200  # an id, agent id or run id longer than this is no id (mem0's are UUIDs)


class Mem0Settings(BaseSettings):
    model_config = SettingsConfigDict(allow_inf_nan=False, env_prefix="CORTEX_MEM0_", env_file=".env", extra="ignore")

    url: HttpUrl | None = Field(default=None, description="The mem0 server's base URL; unset: the plugin is off.")
    api_key: SecretStr | None = Field(default=None, description="Sent as `Authorization: Token <key>`.")
    timeout_seconds: float = Field(default=0.3, gt=0, le=30, description="Whole-call budget, connect included.")
    max_response_bytes: int = Field(
        default=2 * 1024 * 1024,
        ge=1024,
        description="A longer answer is refused (`bad_response`) without reading the rest: parsing it would"
        " hold up every other request of the aggregator.",
    )


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
    """A moment without an offset is taken as UTC (mem0 writes UTC), so it is relayed as Cortex's own are."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def _relayable(text: str) -> bool:
    """False for text with a lone surrogate (JSON's `\\ud800`): it has no UTF-8, so no reply can carry it."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _short_text(value: Any) -> str | None:
    return value if isinstance(value, str) and len(value) <= MAX_ID_CHARS and _relayable(value) else None


def _score(value: Any) -> float | None:
    """A finite number, else None: `1e999` reads as infinity, and a 400-digit integer overflows a float."""
    if not isinstance(value, int | float):
        return None
    try:
        score = float(value)
    except OverflowError:
        return None
    return score if math.isfinite(score) else None


def _metadata(value: Any) -> dict[str, Any] | None:
    """Within the limits of Cortex's own metadata (16 KiB, 32 levels, valid Unicode, finite numbers), else None."""
    if not isinstance(value, dict):
        return None
    try:
        return checked_metadata(value)
    except ValueError:
        return None


def _is_id(value: Any) -> bool:
    """A text or an integer; not `true`, which Python counts as an integer (it was relayed as "True")."""
    return isinstance(value, str | int) and not isinstance(value, bool)


def _memory(raw: Any) -> ExternalMemory | None:
    """One mem0 record (`id`, `memory`, optional `score`, `metadata`, `agent_id`, `run_id`, `created_at`).

    None without an id and a text a reply can carry. The text is cut to `MAX_ENTRY_CHARS`, as Cortex's
    own entries are; an optional field that is unusable or too large is left out."""
    if not isinstance(raw, dict) or not isinstance(raw.get("memory"), str) or not _is_id(raw.get("id")):
        return None
    record_id, content = _short_text(str(raw["id"])), raw["memory"][:MAX_ENTRY_CHARS]
    if record_id is None or not _relayable(content):
        return None
    try:
        return ExternalMemory(
            source=NAME,
            id=record_id,
            content=content,
            fenced=fence(NAME, content),
            score=_score(raw.get("score")),
            agent_id=_short_text(raw.get("agent_id")),
            run_id=_short_text(raw.get("run_id")),
            metadata=_metadata(raw.get("metadata")),
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
        self.max_response_bytes = settings.max_response_bytes
        headers = {"Authorization": f"Token {settings.api_key.get_secret_value()}"} if settings.api_key else {}
        self.client = httpx.AsyncClient(
            base_url=settings.url.rstrip("/"), headers=headers, timeout=httpx.Timeout(self.timeout)
        )
        # As it may be shown (health, logs): userinfo and a query can carry credentials.
        self.shown_url = self.client.base_url.copy_with(userinfo=b"", query=None, fragment=None)
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
        return None if result.status.ok else f"mem0 at {self.shown_url}: {result.status.reason}"

    async def aclose(self) -> None:
        await self.client.aclose()

    async def _call(self, operation: str, request: httpx.Request, limit: int) -> ExternalMemories:
        started = time.monotonic()
        try:
            async with asyncio.timeout(self.timeout):  # httpx's timeout is per phase; this bounds the whole call
                records = await self._send(request)
            items = list(islice(filter(None, map(_memory, records)), limit))  # map only as many as asked for
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
        return ExternalMemories(items=items, status=ExternalSourceStatus(source=NAME, ok=True))

    async def _send(self, request: httpx.Request) -> list[Any]:
        response = await self.client.send(request, stream=True)
        try:
            status = response.status_code
            if status == 404:
                raise _Failed(ExternalMemoryFailure.NOT_FOUND, f"{request.method} {request.url.path}: 404")
            if status >= 500:
                raise _Failed(ExternalMemoryFailure.SERVER_ERROR, f"{request.method} {request.url.path}: {status}")
            if status >= 400:
                raise _Failed(ExternalMemoryFailure.CLIENT_ERROR, f"{request.method} {request.url.path}: {status}")
            content = await self._read(response)
        finally:
            await response.aclose()
        try:
            body = json.loads(content)
        except (ValueError, RecursionError) as exc:  # RecursionError: nested deeper than the parser goes
            raise _Failed(ExternalMemoryFailure.BAD_RESPONSE, f"not JSON: {exc}") from exc
        return _records(body)

    async def _read(self, response: httpx.Response) -> bytes:
        """The body, refused once it runs past `max_response_bytes` (decoded, so a compressed one too)."""
        content = bytearray()
        async for chunk in response.aiter_bytes():
            content += chunk
            if len(content) > self.max_response_bytes:
                raise _Failed(ExternalMemoryFailure.BAD_RESPONSE, f"answer over {self.max_response_bytes} bytes")
        return bytes(content)

    def _failed(self, operation: str, reason: ExternalMemoryFailure, started: float, detail: str) -> ExternalMemories:
        self.failures.record(operation, reason, time.monotonic() - started, detail)
        return ExternalMemories(items=[], status=ExternalSourceStatus(source=NAME, ok=False, reason=reason))


def create() -> Mem0Memory:
    """Entry point (`cortex.memory` group): the plugin configured from `CORTEX_MEM0_*`."""
    return Mem0Memory(Mem0Settings())
