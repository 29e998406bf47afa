"""Extraction in worker processes (real ones): a file too slow is failed and its worker replaced; a worker
that dies or is abandoned takes no file's result with it, and the next file is read by a fresh one."""

import asyncio
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass

import psutil
import pytest

from cortex_extractors.errors import CorruptFile
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


async def test_a_reader_given_up_on_is_killed_with_its_worker(pool: Pool) -> None:
    before = pool.pids()
    reading = asyncio.create_task(pool.workers.extract("application/pdf", slow_pdf(), "slow.pdf"))
    await asyncio.sleep(0.5)

    reading.cancel()
    with pytest.raises(asyncio.CancelledError):
        await reading

    assert not before & pool.pids()
    assert (await pool.workers.extract(*NOTE)).title == "Plan"
