"""GET /api/memory/recall and GET /api/memory/agent-memories read through to a mem0-like backend: its
memories arrive labelled and fenced beside Cortex's own; a backend that is down, slow, without listing
or failing leaves its part empty — counted, logged — while the page still answers 200 in time."""

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from nats.js import JetStreamContext
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from cortex_memory_plugins.mem0 import Mem0Memory, Mem0Settings
from tests.conftest import Org
from tests.events import publish_remembered, remembered_event
from tests.mem0_metrics import failures, metered
from tests.mem0_server import Behaviour, Mem0Server, serving_mem0, unused_url
from tests.services import RunningServices

pytestmark = pytest.mark.e2e

TIMEOUT = 0.3
SLOW_SECONDS = 3.0
PAGE_BUDGET = 2.0  # the page answers well before the slow backend would (embedding the query included)

Attach = Callable[[str], Mem0Memory]


@pytest.fixture
def reader() -> InMemoryMetricReader:
    return InMemoryMetricReader()


@pytest.fixture
async def attach_mem0(services: RunningServices, reader: InMemoryMetricReader) -> AsyncIterator[Attach]:
    """Give the running aggregator a mem0 reader (as CORTEX_MEM0_URL would at start-up), for this test only."""
    provider = metered(reader)
    readers = services.aggregator.agent_memory

    def attach(url: str) -> Mem0Memory:
        plugin = Mem0Memory(Mem0Settings(url=url, timeout_seconds=TIMEOUT), meter=provider.get_meter("test"))
        readers[:] = [plugin]
        return plugin

    try:
        yield attach
    finally:
        for plugin in readers:
            await plugin.aclose()
        readers.clear()
        provider.shutdown()


@contextmanager
def backend(behaviour: Behaviour | None, org: Org, work: uuid.UUID) -> Iterator[Mem0Server | None]:
    """A mem0-like server holding memories of `org` (one in `work`) and of another org; None: nothing listens."""
    with serving_mem0(behaviour or Behaviour.NORMAL, delay=SLOW_SECONDS) as server:
        server.add("Deploys to production need two approvals", user_id=str(org.id), agent_id="release-bot")
        server.add("Deploys freeze on Fridays", user_id=str(org.id), agent_id="release-bot", run_id=str(work))
        server.add("Deploys are done by the CTO", user_id=str(uuid.uuid4()), agent_id="release-bot")
        yield server if behaviour else None


async def remember(org: Org, content: str) -> None:
    response = await org.member.post(
        "/api/memory/entries", params={"wait": "true"}, json={"content": content, "tier": "org"}
    )
    assert response.status_code == 201, response.text


async def timed_get(org: Org, path: str, params: dict[str, str]) -> tuple[int, dict[str, Any], float]:
    started = time.monotonic()
    response = await org.member.get(path, params=params)
    return response.status_code, response.json(), time.monotonic() - started


async def test_recall_merges_labelled_external_matches_and_lists_agent_memory(
    org: Org, attach_mem0: Attach, reader: InMemoryMetricReader
) -> None:
    await remember(org, "Deploys happen from the release branch")
    work = uuid.uuid4()
    with backend(Behaviour.NORMAL, org, work) as server:
        assert server is not None
        attach_mem0(server.url)
        status, recalled, _ = await timed_get(org, "/api/memory/recall", {"q": "deploys approvals"})
        listed_status, listed, _ = await timed_get(org, "/api/memory/agent-memories", {"workId": str(work)})
        _, everything, _ = await timed_get(org, "/api/memory/agent-memories", {"agentId": "release-bot"})
        _, blank, _ = await timed_get(org, "/api/memory/agent-memories", {"agentId": "  "})
        asked = [params for _, path, params in server.requests if path == "/memories"]

    assert status == 200
    assert [item["content"] for item in recalled["items"]] == ["Deploys happen from the release branch"]
    external = recalled["external"]
    assert [e["content"] for e in external] == [
        "Deploys to production need two approvals",
        "Deploys freeze on Fridays",
    ]
    assert all(e["source"] == "mem0" and e["untrusted"] is True for e in external)
    assert external[0]["fenced"].startswith('<<untrusted source="mem0">>\n')
    assert recalled["sources"] == [{"source": "mem0", "ok": True}]
    assert listed_status == 200
    assert [e["content"] for e in listed["items"]] == ["Deploys freeze on Fridays"]
    assert listed["sources"] == [{"source": "mem0", "ok": True}]
    assert sorted(e["content"] for e in everything["items"]) == [
        "Deploys freeze on Fridays",
        "Deploys to production need two approvals",
    ]  # never the other organization's
    # A blank agent is no filter, as in a recall: before, the backend was asked for an agent named "  " (QA 36).
    assert "agent_id" not in asked[-1] and len(blank["items"]) == 2
    assert failures(reader) == {}


@pytest.mark.parametrize(
    ("behaviour", "reason", "search_fails"),
    [
        (None, "unavailable", True),  # down: connection refused
        (Behaviour.SLOW, "timeout", True),
        (Behaviour.ERROR_500, "server_error", True),
        (Behaviour.LIST_404, "not_found", False),  # search still works; only the listing is empty
    ],
)
async def test_a_failing_backend_leaves_its_part_empty_and_the_page_answers_200(
    org: Org,
    attach_mem0: Attach,
    reader: InMemoryMetricReader,
    behaviour: Behaviour | None,
    reason: str,
    search_fails: bool,
    caplog: pytest.LogCaptureFixture,
) -> None:
    await remember(org, "Deploys happen from the release branch")
    with backend(behaviour, org, uuid.uuid4()) as server:
        attach_mem0(server.url if server else unused_url())
        status, recalled, recall_seconds = await timed_get(org, "/api/memory/recall", {"q": "deploys approvals"})
        listed_status, listed, list_seconds = await timed_get(org, "/api/memory/agent-memories", {})

    assert (status, listed_status) == (200, 200)
    assert recall_seconds < PAGE_BUDGET
    assert list_seconds < PAGE_BUDGET
    assert [item["content"] for item in recalled["items"]] == ["Deploys happen from the release branch"]
    if search_fails:
        assert recalled["external"] == []
        assert recalled["sources"] == [{"source": "mem0", "ok": False, "reason": reason}]
    else:
        assert [e["content"] for e in recalled["external"]] == [
            "Deploys to production need two approvals",
            "Deploys freeze on Fridays",
        ]
        assert recalled["sources"] == [{"source": "mem0", "ok": True}]
    assert listed == {"items": [], "sources": [{"source": "mem0", "ok": False, "reason": reason}]}
    expected = {("list", reason): 1, **({("search", reason): 1} if search_fails else {})}
    assert failures(reader) == expected
    logged = [r.getMessage() for r in caplog.records if "external agent memory failed" in r.getMessage()]
    assert len(logged) == sum(expected.values())
    assert all(f"reason={reason}" in line for line in logged)


def answering(*records: str) -> bytes:
    return ('{"results": [' + ", ".join(records) + "]}").encode()


@pytest.mark.parametrize(
    ("answer", "contents", "reason"),
    [
        (
            answering('{"id": "b1", "memory": "Deploys score high", "score": ' + "9" * 400 + "}"),
            ["Deploys score high"],
            None,
        ),
        (answering('{"id": "s1", "memory": "Deploys \\ud800"}', '{"id": "\\udfff", "memory": "Deploys"}'), [], None),
        (
            answering('{"id": "d1", "memory": "Deploys deep", "metadata": ' + '{"a": ' * 300 + "1" + "}" * 300 + "}"),
            ["Deploys deep"],
            None,
        ),
        (answering('{"id": "h1", "memory": "' + "z" * 9_000_000 + '"}'), [], "bad_response"),  # over the size cap
    ],
    ids=["huge-score", "lone-surrogates", "deep-metadata", "9-MB"],
)
async def test_an_answer_no_reply_could_carry_leaves_the_page_200(
    org: Org,
    attach_mem0: Attach,
    reader: InMemoryMetricReader,
    answer: bytes,
    contents: list[str],
    reason: str | None,
) -> None:
    await remember(org, "Deploys happen from the release branch")
    with serving_mem0(Behaviour.RAW) as server:
        server.raw = answer
        attach_mem0(server.url)
        status, recalled, recall_seconds = await timed_get(org, "/api/memory/recall", {"q": "deploys"})
        listed_status, listed, list_seconds = await timed_get(org, "/api/memory/agent-memories", {})

    assert (status, listed_status) == (200, 200)
    assert recall_seconds < PAGE_BUDGET
    assert list_seconds < PAGE_BUDGET
    assert [item["content"] for item in recalled["items"]] == ["Deploys happen from the release branch"]
    source = {"source": "mem0", "ok": reason is None, **({"reason": reason} if reason else {})}
    for page, external in ((recalled, recalled["external"]), (listed, listed["items"])):
        assert [e["content"] for e in external] == contents
        assert all("score" not in e and "metadata" not in e for e in external)
        assert page["sources"] == [source]
    assert failures(reader) == ({("search", reason): 1, ("list", reason): 1} if reason else {})
    assert {path for _, path, _ in server.requests} == {"/search", "/memories"}  # the answer was asked for


async def test_a_recall_too_large_for_one_message_keeps_its_best_matches_and_says_so(
    org: Org, js: JetStreamContext, attach_mem0: Attach
) -> None:
    """QA 36: 100 entries of the largest size (8192 emoji, 16 KiB of metadata) beside a backend's 2 MiB answer
    came to 8.7 MB, over the 8 MB NATS carries in one message: the recall answered 502."""
    for n in range(100):
        content = f"hugeentry{n} " + "\U0001f600" * 8000
        await publish_remembered(js, remembered_event(org.id, content, metadata={"p": "\u00e9" * 8000}))

    deadline = time.monotonic() + 120
    while (await org.member.get("/api/memory/stats")).json()["memoryEntries"] < 100:
        assert time.monotonic() < deadline, "the entries were not all stored in time"
        await asyncio.sleep(0.5)
    record = '{"id": "b%d", "memory": "hugeentry ' + "\U0001f600" * 8000 + '"}'
    with serving_mem0(Behaviour.RAW) as server:
        server.raw = answering(*(record % n for n in range(60)))
        attach_mem0(server.url)
        response = await org.member.get("/api/memory/recall", params={"q": "hugeentry5", "limit": "100"})

    assert response.status_code == 200, response.text[:500]
    assert len(response.content) <= 8 * 1024 * 1024
    recalled = response.json()
    assert recalled["truncated"] is True
    assert len(recalled["items"]) == 100  # Cortex's own first: every one fits
    assert recalled["items"][0]["content"].startswith("hugeentry5 ")
    assert 0 < len(recalled["external"]) < 60  # then the backend's, in its order, while they fit
    assert [e["id"] for e in recalled["external"]] == [f"b{n}" for n in range(len(recalled["external"]))]
    assert recalled["sources"] == [{"source": "mem0", "ok": True}]
