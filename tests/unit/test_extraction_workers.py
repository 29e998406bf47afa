"""Extraction in worker processes (real ones): a file too slow is failed and its worker replaced; a worker
that dies or is abandoned takes no file's result with it, and the next file is read by a fresh one."""

import asyncio
import os
import sys
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from cortex_contracts.uploads import UploadCreated
from cortex_extractors.errors import CorruptFile, TooLarge
from cortex_extractors.extracted import Extracted
from cortex_indexer import extraction_workers as extraction_workers_module
from cortex_indexer import uploads
from cortex_indexer.extraction_workers import ExtractionWorkers, TooSlow, WorkerFailed
from tests.slow_pdf import slow_pdf

NOTE = ("text/markdown", b"# Plan\n\nShip it.", "plan.md")


def extraction_workers() -> set[int]:
    """This process's extraction workers (it may have other children: the test servers)."""
    pids = set()
    for child in psutil.Process(os.getpid()).children():
        try:
            if "cortex_indexer.extraction_workers" in child.cmdline() and child.status() != psutil.STATUS_ZOMBIE:
                pids.add(child.pid)
        except psutil.Error:
            pass  # ended meanwhile
    return pids


@dataclass(frozen=True)
class Pool:
    workers: ExtractionWorkers
    others: frozenset[int]  # extraction workers that are not the pool's: an in-process indexer's, in a full run

    def pids(self) -> set[int]:
        return extraction_workers() - self.others


@pytest.fixture
async def pool() -> AsyncIterator[Pool]:
    others = frozenset(extraction_workers())
    workers = ExtractionWorkers(workers=1, timeout_seconds=2)
    await workers.start()
    yield Pool(workers, others)
    await workers.close()


async def test_a_file_is_read_in_a_worker_and_its_refusal_comes_back_as_itself(pool: Pool) -> None:
    extracted = await pool.workers.extract(*NOTE)
    assert (extracted.title, extracted.text) == ("Plan", "# Plan\n\nShip it.")

    with pytest.raises(CorruptFile, match="not a readable PDF file"):
        await pool.workers.extract("application/pdf", b"%PDF-1.4 nothing more", "cut.pdf")
    assert (await pool.workers.extract(*NOTE)).title == "Plan"  # the same worker goes on


async def test_a_file_that_takes_too_long_is_too_slow_and_its_worker_is_killed(pool: Pool) -> None:
    before = pool.pids()
    assert len(before) == 1

    with pytest.raises(TooSlow, match="reading it took over 2 s"):
        await pool.workers.extract("application/pdf", slow_pdf(), "slow.pdf")

    assert not before & pool.pids()  # killed, not left parsing
    assert (await pool.workers.extract(*NOTE)).title == "Plan"


async def test_a_worker_that_died_fails_its_file_for_a_retry_and_a_new_one_reads_the_next(
    pool: Pool,
) -> None:
    for pid in pool.pids():
        psutil.Process(pid).kill()

    with pytest.raises(WorkerFailed, match="the extraction process ended"):
        await pool.workers.extract(*NOTE)
    assert (await pool.workers.extract(*NOTE)).title == "Plan"


async def test_workers_are_outside_the_indexers_process_group(pool: Pool) -> None:
    """Ctrl-C in a terminal, or `cortex run` stopping, signals the indexer's whole process group. Before, its
    workers died of it too, and an indexer still starting them failed with WorkerFailed (QA 38)."""
    for pid in pool.pids():
        assert os.getpgid(pid) != os.getpgrp()


SLOW_READ_THEN_DIE = """
import asyncio, os, psutil
from cortex_indexer.extraction_workers import ExtractionWorkers
from tests.slow_pdf import slow_pdf

async def main():
    workers = ExtractionWorkers(workers=1, timeout_seconds=600)
    await workers.start()
    asyncio.create_task(workers.extract("application/pdf", slow_pdf(), "slow.pdf"))
    await asyncio.sleep(1)
    print(*(child.pid for child in psutil.Process().children()), flush=True)
    os._exit(0)  # as if killed: nothing closes the worker's pipe in an orderly way

asyncio.run(main())
"""


async def test_a_worker_busy_with_a_slow_file_ends_when_its_indexer_dies() -> None:
    indexer = await asyncio.create_subprocess_exec(
        sys.executable, "-c", SLOW_READ_THEN_DIE, stdout=asyncio.subprocess.PIPE, cwd=Path(__file__).parents[2]
    )
    out, _ = await indexer.communicate()
    (pid,) = map(int, out.split())
    async with asyncio.timeout(10):
        while psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
            await asyncio.sleep(0.1)


async def test_a_reader_given_up_on_is_killed_with_its_worker(pool: Pool) -> None:
    before = pool.pids()
    reading = asyncio.create_task(pool.workers.extract("application/pdf", slow_pdf(), "slow.pdf"))
    await asyncio.sleep(0.5)

    reading.cancel()
    with pytest.raises(asyncio.CancelledError):
        await reading

    assert not before & pool.pids()
    assert (await pool.workers.extract(*NOTE)).title == "Plan"


async def test_a_worker_left_holding_much_memory_ends_after_its_reply_and_a_fresh_one_reads_the_next() -> None:
    others = frozenset(extraction_workers())
    workers = ExtractionWorkers(workers=1, timeout_seconds=5, retire_above_bytes=1)  # every worker is over 1 byte
    try:
        seen = []
        for _ in range(3):
            assert (await workers.extract(*NOTE)).title == "Plan"  # the reply still comes back
            seen.append(extraction_workers() - others)
        # Before, one worker read every file and kept the memory the largest took (1.3 GB after a DOCX).
        assert all(not pids for pids in seen)  # each ended after its reply (and was reaped)
    finally:
        await workers.close()


def test_a_file_that_runs_a_worker_out_of_memory_is_too_large_and_ends_that_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def out_of_memory(media_type: str, data: bytes, filename: str | None) -> None:
        raise MemoryError

    monkeypatch.setattr(extraction_workers_module, "extract", out_of_memory)
    reply = extraction_workers_module._reply_to(*NOTE)
    assert isinstance(reply, TooLarge) and reply.summary == "too large: reading it needs more than 2 GiB of memory"
    assert extraction_workers_module._spent(reply, retire_above_bytes=2**62)


async def test_a_file_is_fetched_only_in_its_turn_so_waiting_events_hold_no_bytes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    steps: list[str] = []

    async def read_bytes(*args: object, **kwargs: object) -> bytes:
        steps.append("fetched")
        await asyncio.sleep(0.01)
        return NOTE[1]

    workers = ExtractionWorkers(workers=1, timeout_seconds=5)
    extract_in_turn = workers._extract_in_turn

    async def extract(media_type: str, data: bytes, filename: str | None) -> Extracted:
        extracted = await extract_in_turn(media_type, data, filename)
        steps.append("extracted")
        return extracted

    monkeypatch.setattr(uploads, "read_bytes", read_bytes)
    monkeypatch.setattr(workers, "_extract_in_turn", extract)
    upload = UploadCreated.model_validate(
        {
            "uploadId": str(uuid.uuid4()),
            "organizationId": str(uuid.uuid4()),
            "filename": "plan.md",
            "mediaType": "text/markdown",
            "sizeBytes": len(NOTE[1]),
            "object": {"bucket": "cortex-uploads", "name": "x/plan.md"},
        }
    )
    try:
        texts = await asyncio.gather(*(uploads._text(None, workers, upload, final=False) for _ in range(3)))  # type: ignore[arg-type]
    finally:
        await workers.close()
    assert [text.title for text in texts] == ["Plan"] * 3
    # Before: "fetched" three times first; every event waiting for the one worker held its file meanwhile.
    assert steps == ["fetched", "extracted"] * 3


async def test_a_worker_started_by_a_large_process_is_not_taken_for_spent() -> None:
    others = frozenset(extraction_workers())
    ballast = b"x" * (600 * 2**20)  # the starting process holds more than the bound (the indexer holds a model)
    workers = ExtractionWorkers(workers=1, timeout_seconds=10)
    try:
        await workers.start()
        del ballast
        first = extraction_workers() - others
        for _ in range(2):
            assert (await workers.extract(*NOTE)).title == "Plan"
        # Before: the peak the worker inherited across exec (~600 MB here) counted as its own, so every worker
        # ended after its first reply, and in a full test run the next file found it gone.
        assert extraction_workers() - others == first
    finally:
        await workers.close()


async def test_a_worker_holds_no_credential_of_its_indexer(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker parses untrusted files: before, it inherited the indexer's whole environment, the database's
    URL with its password and CORTEX_SECRET (which signs every token) among it."""
    monkeypatch.setenv("DATABASE_URL", "postgresql://cortex_app:hunter2@db/cortex")
    monkeypatch.setenv("CORTEX_SECRET", "s" * 48)
    monkeypatch.setenv("CORTEX_EMBEDDER_OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    others = extraction_workers()
    workers = ExtractionWorkers(workers=1, timeout_seconds=5)
    await workers.start()
    try:
        (pid,) = extraction_workers() - others
        environment = psutil.Process(pid).environ()
        assert (await workers.extract(*NOTE)).title == "Plan"
    finally:
        await workers.close()
    assert not {"DATABASE_URL", "CORTEX_SECRET", "CORTEX_EMBEDDER_OPENAI_API_KEY"} & set(environment)
    assert environment["LC_ALL"] == "C.UTF-8"
    assert environment["PATH"] == os.environ["PATH"]
