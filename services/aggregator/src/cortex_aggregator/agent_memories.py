"""Agent memory kept outside Cortex: search and list every configured `memory` reader at once.
Best effort: the readers never raise, and a failed one contributes no items and its status."""

import asyncio
from collections.abc import Sequence

from cortex_contracts.memory import (
    AgentMemories,
    AgentMemoriesRequest,
    AgentMemoryReader,
    ExternalMemories,
    ExternalMemory,
    ExternalSourceStatus,
    MemoryNamespace,
)


def _merge(answers: Sequence[ExternalMemories]) -> tuple[list[ExternalMemory], list[ExternalSourceStatus]]:
    items = [item for answer in answers for item in answer.items]
    return items, [answer.status for answer in answers]


async def search_external(
    readers: Sequence[AgentMemoryReader], namespace: MemoryNamespace, query: str, limit: int
) -> tuple[list[ExternalMemory], list[ExternalSourceStatus]]:
    if not readers:
        return [], []
    return _merge(await asyncio.gather(*(reader.search(namespace, query, limit) for reader in readers)))


async def list_agent_memories(readers: Sequence[AgentMemoryReader], request: AgentMemoriesRequest) -> AgentMemories:
    namespace = MemoryNamespace(
        organization_id=request.organization_id, work_id=request.work_id, agent_id=request.agent_id
    )
    answers = await asyncio.gather(*(reader.list_memories(namespace, request.limit) for reader in readers))
    items, sources = _merge(answers)
    return AgentMemories(items=items[: request.limit], sources=sources)
