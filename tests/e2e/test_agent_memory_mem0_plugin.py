"""The mem0 `memory` plugin against a local server that behaves like mem0's REST API — normally, down,
slow, without listing, failing, answering what no reply can carry: it answers within its time budget,
never raises, and counts each failure."""

import time
import uuid
from collections.abc import AsyncIterator, Callable

import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from cortex_contracts.memory import (
    MAX_ENTRY_CHARS,
    AgentMemories,
    ExternalMemory,
    ExternalMemoryFailure,
    MemoryNamespace,
)
from cortex_contracts.rpc import AgentMemoriesReply
from cortex_memory_plugins import mem0
from cortex_memory_plugins.mem0 import Mem0Memory, Mem0Settings, _memory
from tests.mem0_metrics import failures, metered
from tests.mem0_server import Behaviour, serving_mem0, unused_url

TIMEOUT = 0.3
SLACK = 0.25  # scheduling on a busy 2-core machine; a hung call would take the server's 3 s

ORG, OTHER_ORG, WORK = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
IN_ORG = MemoryNamespace(organization_id=ORG)
IN_WORK = MemoryNamespace(organization_id=ORG, work_id=WORK, agent_id="planner")

Factory = Callable[[str], Mem0Memory]


@pytest.fixture
def reader() -> InMemoryMetricReader:
    return InMemoryMetricReader()


@pytest.fixture
async def plugin_at(reader: InMemoryMetricReader) -> AsyncIterator[Factory]:
    provider = metered(reader)
    made: list[Mem0Memory] = []

    def make(url: str) -> Mem0Memory:
        made.append(Mem0Memory(Mem0Settings(url=url, timeout_seconds=TIMEOUT), meter=provider.get_meter("test")))
        return made[-1]

    yield make
    for plugin in made:
        await plugin.aclose()
    provider.shutdown()


async def test_normal_server_search_and_list_are_scoped_to_the_org_work_and_agent(
    plugin_at: Factory, reader: InMemoryMetricReader
) -> None:
    with serving_mem0() as server:
        server.add("the customer prefers invoices in euros", user_id=str(ORG), agent_id="planner", run_id=str(WORK))
        server.add("the customer prefers dark mode", user_id=str(ORG))
        server.add("the customer prefers invoices in yen", user_id=str(OTHER_ORG), agent_id="planner")
        plugin = plugin_at(server.url)

        found = await plugin.search(IN_ORG, "invoices euros", 10)
        listed = await plugin.list_memories(IN_WORK, 10)
        health = await plugin.health()

    assert found.status.ok
    assert [m.content for m in found.items] == ["the customer prefers invoices in euros"]
    hit = found.items[0]
    assert (hit.source, hit.untrusted, hit.agent_id, hit.run_id) == ("mem0", True, "planner", str(WORK))
    assert hit.fenced == '<<untrusted source="mem0">>\nthe customer prefers invoices in euros\n<</untrusted>>'
    assert hit.score is not None
    assert hit.created_at is not None
    assert listed.status.ok
    assert [m.content for m in listed.items] == ["the customer prefers invoices in euros"]
    assert health is None
    # The namespaces as sent: the organization is always the user_id; a Work is the run_id.
    assert ("POST", "/search", {"query": "invoices euros", "limit": 10, "user_id": str(ORG)}) in server.requests
    assert ("GET", "/memories", {"user_id": str(ORG), "run_id": str(WORK), "agent_id": "planner", "limit": "10"}) in (
        server.requests
    )
    assert failures(reader) == {}


@pytest.mark.parametrize(
    ("behaviour", "reason"),
    [
        (None, ExternalMemoryFailure.UNAVAILABLE),  # nothing listens: connection refused
        (Behaviour.SLOW, ExternalMemoryFailure.TIMEOUT),
        (Behaviour.ERROR_500, ExternalMemoryFailure.SERVER_ERROR),
    ],
)
async def test_a_failing_backend_answers_empty_within_the_budget_and_is_counted(
    plugin_at: Factory, reader: InMemoryMetricReader, behaviour: Behaviour | None, reason: ExternalMemoryFailure
) -> None:
    with serving_mem0(behaviour or Behaviour.NORMAL, delay=3.0) as server:
        server.add("the customer prefers invoices in euros", user_id=str(ORG))
        plugin = plugin_at(server.url if behaviour else unused_url())
        started = time.monotonic()
        found = await plugin.search(IN_ORG, "invoices", 10)
        search_seconds = time.monotonic() - started
        started = time.monotonic()
        listed = await plugin.list_memories(IN_ORG, 10)
        list_seconds = time.monotonic() - started
        health = await plugin.health()

    for answer in (found, listed):
        assert answer.items == []
        assert (answer.status.source, answer.status.ok, answer.status.reason) == ("mem0", False, reason)
    assert search_seconds < TIMEOUT + SLACK
    assert list_seconds < TIMEOUT + SLACK
    assert health is not None
    assert reason.value in health
    assert failures(reader) == {("search", reason.value): 1, ("list", reason.value): 2}  # health lists too
    if behaviour is not None:
        assert {path for _, path, _ in server.requests} == {"/search", "/memories"}  # the fault really happened


async def test_a_server_without_listing_still_searches(plugin_at: Factory, reader: InMemoryMetricReader) -> None:
    with serving_mem0(Behaviour.LIST_404) as server:
        server.add("the customer prefers invoices in euros", user_id=str(ORG))
        plugin = plugin_at(server.url)
        found = await plugin.search(IN_ORG, "invoices", 10)
        listed = await plugin.list_memories(IN_ORG, 10)

    assert [m.content for m in found.items] == ["the customer prefers invoices in euros"]
    assert listed.items == []
    assert listed.status.reason is ExternalMemoryFailure.NOT_FOUND
    assert failures(reader) == {("list", "not_found"): 1}


async def test_a_timeout_budget_is_configurable(plugin_at: Factory, reader: InMemoryMetricReader) -> None:
    with serving_mem0(Behaviour.SLOW, delay=0.5) as server:
        server.add("the customer prefers invoices in euros", user_id=str(ORG))
        patient = Mem0Memory(Mem0Settings(url=server.url, timeout_seconds=2.0))
        try:
            found = await patient.search(IN_ORG, "invoices", 10)
        finally:
            await patient.aclose()
        hasty = await plugin_at(server.url).search(IN_ORG, "invoices", 10)

    assert [m.content for m in found.items] == ["the customer prefers invoices in euros"]
    assert hasty.status.reason is ExternalMemoryFailure.TIMEOUT
    assert failures(reader) == {("search", "timeout"): 1}


async def test_health_shows_the_url_without_credentials(
    plugin_at: Factory, reader: InMemoryMetricReader, caplog: pytest.LogCaptureFixture
) -> None:
    with serving_mem0(Behaviour.ERROR_500) as server:
        secret_url = server.url.replace("http://", "http://svcuser:S3cretPassw0rd@") + "/mem0?api_key=K3y"
        health = await plugin_at(secret_url).health()

    assert health == f"mem0 at {server.url}/mem0: server_error"
    assert failures(reader) == {("list", "server_error"): 1}  # the fault happened, and was logged
    for shown in (health, caplog.text):
        assert "svcuser" not in shown
        assert "S3cretPassw0rd" not in shown
        assert "K3y" not in shown


def raw_records(*records: str) -> bytes:
    return ('{"results": [' + ", ".join(records) + "]}").encode()


DEEP = '{"a": ' * 300 + "1" + "}" * 300  # deeper than pydantic serialises
HUGE = "z" * 1_000_000


@pytest.mark.parametrize(
    ("answer", "contents"),
    [
        (raw_records('{"id": "b1", "memory": "a huge score", "score": ' + "9" * 400 + "}"), ["a huge score"]),
        (raw_records('{"id": "n1", "memory": "no score", "score": NaN}'), ["no score"]),
        (raw_records('{"id": "s1", "memory": "lone \\ud800"}', '{"id": "s2", "memory": "kept"}'), ["kept"]),
        (raw_records('{"id": "\\udfff", "memory": "a lone surrogate id"}'), []),
        (raw_records(f'{{"id": "d1", "memory": "deep metadata", "metadata": {DEEP}}}'), ["deep metadata"]),
        (raw_records(f'{{"id": "h1", "memory": "{HUGE}"}}'), ["z" * MAX_ENTRY_CHARS]),
        (raw_records(f'{{"id": "h2", "memory": "huge metadata", "metadata": {{"k": "{HUGE}"}}}}'), ["huge metadata"]),
    ],
    ids=[
        "huge-score",
        "nan-score",
        "lone-surrogate",
        "lone-surrogate-id",
        "deep-metadata",
        "huge-text",
        "huge-metadata",
    ],
)
async def test_records_a_reply_cannot_carry_are_skipped_cut_or_stripped(
    plugin_at: Factory, reader: InMemoryMetricReader, answer: bytes, contents: list[str]
) -> None:
    with serving_mem0(Behaviour.RAW) as server:
        server.raw = answer
        found = await plugin_at(server.url).search(IN_ORG, "anything", 10)

    assert found.status.ok
    assert [m.content for m in found.items] == contents
    assert all(m.score is None and m.metadata is None for m in found.items)
    reply = AgentMemoriesReply(result=AgentMemories(items=found.items, sources=[found.status])).to_wire()
    assert len(reply) < 64 * 1024  # serialisable, and small
    assert server.requests  # the answer really was read
    assert failures(reader) == {}


@pytest.mark.parametrize("length_sent", [True, False])
async def test_an_answer_over_the_size_cap_is_refused(reader: InMemoryMetricReader, length_sent: bool) -> None:
    provider = metered(reader)
    records = [f'{{"id": "m{i}", "memory": "{"w" * 200}"}}' for i in range(5000)]  # ~1 MB
    with serving_mem0(Behaviour.RAW) as server:
        server.raw, server.raw_length_sent = raw_records(*records), length_sent
        settings = Mem0Settings(url=server.url, timeout_seconds=2.0, max_response_bytes=64 * 1024)
        plugin = Mem0Memory(settings, meter=provider.get_meter("test"))
        try:
            found = await plugin.search(IN_ORG, "anything", 10)
            server.raw = raw_records(*records[:10])  # within the cap: read
            within = await plugin.search(IN_ORG, "anything", 10)
        finally:
            await plugin.aclose()
            provider.shutdown()

    assert found.items == []
    assert (found.status.ok, found.status.reason) == (False, ExternalMemoryFailure.BAD_RESPONSE)
    assert failures(reader) == {("search", "bad_response"): 1}
    assert len(within.items) == 10
    assert len(server.requests) == 2


async def test_only_as_many_records_as_asked_for_are_read(plugin_at: Factory, monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[object] = []

    def counted(raw: object) -> ExternalMemory | None:
        read.append(raw)
        return _memory(raw)

    monkeypatch.setattr(mem0, "_memory", counted)
    records = ["1", "null", *(f'{{"id": "m{i}", "memory": "memory {i}"}}' for i in range(1000))]
    with serving_mem0(Behaviour.RAW) as server:
        server.raw = raw_records(*records)
        found = await plugin_at(server.url).search(IN_ORG, "anything", 5)

    assert [m.id for m in found.items] == ["m0", "m1", "m2", "m3", "m4"]
    assert len(read) == 7  # the two invalid ones, then five
