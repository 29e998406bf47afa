"""Text extraction in worker processes of its own, each file given a time and a memory budget.

A parser cannot be stopped from outside a thread: a PDF built to be slow (9.5 KB, 20 pages sharing one
2 MB content stream) held a worker thread for minutes, and the embedder, which shared that thread pool,
waited behind it — every note, upload and memory entry with it. Here extraction runs in separate
processes (`python -m cortex_indexer.extraction_workers`) at low CPU priority: one that overruns its time
is killed and the file fails as too slow; one that asks for more memory than its budget fails as too
large. A worker serves file after file, until one leaves it holding much memory (it then ends, and a
fresh one reads the next); jobs and replies are pickles framed by their length on its
stdin and stdout (the worker is our own program, so the pickles are trusted).

A worker belongs to its indexer, not to the indexer's process group: Ctrl-C in a terminal and a
supervisor's stop signal the whole group, and workers that died of it made an indexer still starting
fail (exit code 1, "restart me") instead of stopping. So each runs in a session of its own and ends
with its indexer: killed by it, at the end of its stdin, or (Linux) when the indexer dies. A worker parses
files anyone in the organization could upload: it gets only the environment Python needs, not the database's
URL (its password), the secret or any other credential of the indexer's.
"""

import asyncio
import contextlib
import ctypes
import ctypes.util
import logging
import os
import pickle
import re
import resource
import signal
import struct
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import BinaryIO

from cortex_extractors import ExtractionError, extract
from cortex_extractors.errors import TooLarge
from cortex_extractors.extracted import Extracted

log = logging.getLogger(__name__)

NICENESS = 10  # below the model and the event loop: a slow file slows others' documents little
MEMORY_LIMIT_BYTES = 2 * 2**30
RETIRE_ABOVE_BYTES = 512 * 2**20  # a worker still holding this much after a reply ends
FRAME = struct.Struct("!Q")

Job = tuple[str, bytes, str | None]  # media type, the file's bytes, its name
Reply = Extracted | BaseException
WARM_UP: Job = ("text/plain", b"ready", None)
# What a worker keeps of its indexer's environment: where Python and its packages are, the locale, the time zone,
# where temporary files go.
WORKER_VARIABLES = re.compile(r"PATH|HOME|TMPDIR|TZ|LANG|LANGUAGE|LC_[A-Z]+|PYTHON[A-Z_]*|VIRTUAL_ENV")


def worker_environment(environ: Mapping[str, str]) -> dict[str, str]:
    return {name: value for name, value in environ.items() if WORKER_VARIABLES.fullmatch(name)}


class TooSlow(ExtractionError):
    kind = "too slow"


class OutOfMemory(TooLarge):
    """The file needed more than the worker's memory budget (which then ends: see `_spent`)."""


class WorkerFailed(Exception):
    """The worker broke or died: not known to be the file's fault, so the event is retried."""


class ExtractionWorkers:
    """At most `workers` files extracted at once, each within `timeout_seconds`."""

    def __init__(self, workers: int, timeout_seconds: float, retire_above_bytes: int = RETIRE_ABOVE_BYTES) -> None:
        """`retire_above_bytes`: a worker still holding this much memory after a reply ends."""
        self.timeout_seconds = timeout_seconds
        self._retire_above = retire_above_bytes
        self._workers = workers
        self._slots = asyncio.Semaphore(workers)
        self._idle: list[asyncio.subprocess.Process] = []

    async def start(self) -> None:
        """Start every worker now and let it read a line, so the first files do not wait for a Python to
        start and import the parsers (~0.3 s)."""
        started = await asyncio.gather(*(self._spawn() for _ in range(self._workers - len(self._idle))))
        await asyncio.gather(*(self._ask(worker, WARM_UP) for worker in started))
        self._idle += started

    async def _spawn(self) -> asyncio.subprocess.Process:
        return await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            __name__,
            str(self._retire_above),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            start_new_session=True,
            env=worker_environment(os.environ),
        )

    @asynccontextmanager
    async def turn(self) -> AsyncIterator[Callable[[str, bytes, str | None], Awaitable[Extracted]]]:
        """One of the `workers` turns, and the `extract` to call in it. A caller fetches the file's bytes in
        its turn: fetched before, every event waiting for a turn held its file (up to 64 MiB each, 192
        events at once) in the indexer's memory."""
        async with self._slots:
            yield self._extract_in_turn

    async def extract(self, media_type: str, data: bytes, filename: str | None) -> Extracted:
        async with self.turn() as extract:
            return await extract(media_type, data, filename)

    async def _extract_in_turn(self, media_type: str, data: bytes, filename: str | None) -> Extracted:
        worker = self._live_idle() or await self._spawn()
        try:
            reply, spent = await self._ask(worker, (media_type, data, filename))
        except BaseException:  # timed out, cancelled or broken: what it is doing is unknown
            await _kill(worker)
            raise
        if spent:  # it ends by itself: reaped here, so that no file is handed to it meanwhile
            await _kill(worker)
        else:
            self._idle.append(worker)
        if isinstance(reply, BaseException):
            raise reply
        return reply

    def _live_idle(self) -> asyncio.subprocess.Process | None:
        """An idle worker still alive: one killed while it waited (the OOM killer) is dropped, not handed a
        file that would then fail for it."""
        while self._idle:
            worker = self._idle.pop()
            if worker.returncode is None:
                return worker
        return None

    async def _ask(self, worker: asyncio.subprocess.Process, job: Job) -> tuple[Reply, bool]:
        """The worker's reply to the job, and whether the worker ends after it."""
        assert worker.stdin is not None and worker.stdout is not None
        try:
            payload = pickle.dumps(job)
            worker.stdin.write(FRAME.pack(len(payload)) + payload)
            async with asyncio.timeout(self.timeout_seconds):
                await worker.stdin.drain()
                (size,) = FRAME.unpack(await worker.stdout.readexactly(FRAME.size))
                reply: tuple[Reply, bool] = pickle.loads(await worker.stdout.readexactly(size))  # noqa: S301 - ours
        except TimeoutError:
            raise TooSlow(f"reading it took over {self.timeout_seconds:g} s") from None
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            raise WorkerFailed(f"the extraction process ended ({await _ending(worker)})") from exc
        return reply

    async def close(self) -> None:
        idle, self._idle = self._idle, []
        for worker in idle:
            await _kill(worker)


async def _ending(worker: asyncio.subprocess.Process) -> str:
    """How the worker ended, once it is reaped (its exit code is unknown until then)."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(1):
            await worker.wait()
    code = worker.returncode
    if code is None:
        return "still running, its pipes closed"
    return f"killed by signal {-code}" if code < 0 else f"exit code {code}"


async def _kill(worker: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError):
        worker.kill()
    await worker.wait()


def _read_frame(stream: BinaryIO) -> bytes | None:
    head = stream.read(FRAME.size)
    if len(head) < FRAME.size:
        return None  # the indexer closed the pipe: it is done with this worker
    (size,) = FRAME.unpack(head)
    return stream.read(size)


def _reply_to(media_type: str, data: bytes, filename: str | None) -> Reply:
    try:
        return extract(media_type, data, filename)
    except ExtractionError as exc:
        return exc
    except MemoryError:
        return OutOfMemory(f"reading it needs more than {MEMORY_LIMIT_BYTES // 2**30} GiB of memory")
    except Exception as exc:  # noqa: BLE001 - sent to the indexer, which retries the event
        return WorkerFailed(f"{type(exc).__name__}: {exc}")


def _resident_bytes() -> int:
    """This process's resident memory now (not its peak: Linux carries the peak of the process that started
    it across exec, so a worker of a large indexer would seem spent at once). 0 where /proc is missing."""
    try:
        return int(Path("/proc/self/statm").read_text().split()[1]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        return 0


def _spent(reply: Reply, retire_above_bytes: int) -> bool:
    """Whether this worker ends after this reply: Python keeps the memory a large file took (QA 35: a worker
    idled at 1.3 GB after one DOCX), and after a MemoryError its state is not to be trusted. The indexer
    starts a fresh one for the next file."""
    return isinstance(reply, OutOfMemory) or _resident_bytes() > retire_above_bytes


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _end_with_parent() -> None:
    """Be killed when the indexer dies (Linux): a worker busy with a slow file would not see its stdin end."""
    libc = ctypes.util.find_library("c")
    if sys.platform.startswith("linux") and libc:
        ctypes.CDLL(libc, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def serve(retire_above_bytes: int) -> None:
    """The worker's loop: a job in on stdin, its reply out, until stdin closes (or it is spent)."""
    _end_with_parent()
    os.nice(NICENESS)
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever a parser prints goes to the log, not into a reply
    while (frame := _read_frame(sys.stdin.buffer)) is not None:
        job: Job = pickle.loads(frame)  # noqa: S301 - from the indexer that started this process
        reply = _reply_to(*job)
        spent = _spent(reply, retire_above_bytes)
        payload = pickle.dumps((reply, spent))
        replies.write(FRAME.pack(len(payload)) + payload)
        replies.flush()
        if spent:
            return


if __name__ == "__main__":
    # By its own name, so the errors it sends pickle as cortex_indexer.extraction_workers.*, not __main__.*.
    from cortex_indexer.extraction_workers import serve as serve_by_name

    serve_by_name(int(sys.argv[1]))
