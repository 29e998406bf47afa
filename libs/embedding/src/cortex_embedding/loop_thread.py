"""An event loop of its own, in a daemon thread, for blocking code to run coroutines on.

The `Embedder` protocol is blocking (callers run it in a worker thread), but a deadline for a whole HTTP
exchange needs asyncio: httpx's own timeouts apply to each connect, read and write separately, so an
endpoint that trickles its answer a byte at a time never trips them (QA 34). The coroutines run here
see the caller's context variables (`run_coroutine_threadsafe` copies them), so their log lines carry
the caller's trace.
"""

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    def __init__(self, name: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """The coroutine's result, waited for in the calling thread (never the loop's own)."""
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()
