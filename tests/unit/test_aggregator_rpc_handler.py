"""The aggregator's RPC entry points send one reply whatever happens — a result that cannot be serialised
included, else the caller would wait out its timeout for nothing."""

import json
import uuid
from typing import Any

import pytest

from cortex_aggregator.handlers import rpc_handler
from cortex_contracts.memory import AgentMemories, AgentMemoriesRequest, ExternalMemory
from cortex_contracts.rpc import AgentMemoriesReply

REQUEST = AgentMemoriesRequest(organization_id=uuid.uuid4()).to_wire()


def memories(**fields: Any) -> AgentMemories:
    memory = ExternalMemory(source="mem0", id="m1", content="likes tea", fenced="likes tea", **fields)
    return AgentMemories(items=[memory], sources=[])


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


async def test_a_result_is_answered() -> None:
    async def work(_request: AgentMemoriesRequest) -> AgentMemories:
        return memories()

    reply = AgentMemoriesReply.model_validate_json(
        await rpc_handler(AgentMemoriesRequest, AgentMemoriesReply, work)(REQUEST)
    )

    assert reply.error is None
    assert reply.result == memories()


@pytest.mark.parametrize(
    "result",
    [
        memories(agent_id="lone \ud800 surrogate"),  # no UTF-8 for it
        memories(metadata=nested(300)),  # deeper than the serialiser goes
    ],
)
async def test_a_result_that_cannot_be_serialised_is_answered_with_an_error(
    result: AgentMemories, caplog: pytest.LogCaptureFixture
) -> None:
    async def work(_request: AgentMemoriesRequest) -> AgentMemories:
        return result

    answer = await rpc_handler(AgentMemoriesRequest, AgentMemoriesReply, work)(REQUEST)

    assert json.loads(answer) == {
        "error": {"status": 500, "title": "Internal error", "detail": "the reply cannot be sent"}
    }
    assert "AgentMemoriesRequest: the reply cannot be serialised" in caplog.text
    assert "PydanticSerializationError" in caplog.text  # the fault really happened
