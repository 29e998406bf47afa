"""A document's detail as the API gives it, once it is what a test waits for."""

import asyncio
import uuid
from typing import Any

import httpx


async def detail_when(client: httpx.AsyncClient, document_id: uuid.UUID, **expected: Any) -> dict[str, Any]:
    """The document's detail once it exists and has the expected top-level fields."""
    async with asyncio.timeout(30):
        while True:
            response = await client.get(f"/api/memory/documents/{document_id}")
            if response.status_code == 200:
                detail: dict[str, Any] = response.json()
                if all(detail.get(key) == value for key, value in expected.items()):
                    return detail
            else:
                assert response.status_code == 404, response.text
            await asyncio.sleep(0.2)
