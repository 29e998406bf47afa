"""Request/reply models for `rpc.aggregator.*`."""

from typing import Annotated
from uuid import UUID

from pydantic import Field, StringConstraints

from cortex_contracts.base import WireModel
from cortex_contracts.memory_item import MemoryItem

MAX_FEED_LIMIT = 100
Query = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=1000)]


class FeedRequest(WireModel):
    organization_id: UUID = Field(description="The caller's organization; every result is bounded by it.")
    q: Query | None = Field(default=None, description="Search text; absent = most recently updated first.")
    limit: int = Field(default=20, ge=1, le=MAX_FEED_LIMIT, description="Page size.")
    cursor: str | None = Field(default=None, max_length=2000, description="Opaque cursor from a previous page.")


class FeedPage(WireModel):
    items: list[MemoryItem] = Field(description="This page of items, best (or newest) first.")
    next_cursor: str | None = Field(default=None, description="Cursor for the next page; null at the end.")


class RpcError(WireModel):
    status: int = Field(description="HTTP-like status: 400 for a bad request, 500 for a server fault.")
    title: str = Field(description="Short summary.")
    detail: str = Field(description="What went wrong.")


class FeedReply(WireModel):
    """Exactly one of `result` and `error` is set."""

    result: FeedPage | None = None
    error: RpcError | None = None
