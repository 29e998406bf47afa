"""The heap a service has built by the time it serves, kept out of the garbage collector's full passes."""

import gc
from collections.abc import Iterator
from contextlib import contextmanager


def freeze_startup_heap() -> None:
    """Everything alive once start-up is done (modules, the model, pools, plugins) lives as long as the
    process. Frozen, a full collection no longer walks them: in the aggregator (~110k objects once the
    model is loaded) each such pass paused the event loop for ~66 ms, in the tail of search latency."""
    gc.collect()
    gc.freeze()


class _Holds:
    count = 0  # bulk builds under way: the collector runs again when the last one ends


@contextmanager
def collector_held() -> Iterator[None]:
    """No automatic garbage collection while a bulk build allocates hundreds of thousands of containers
    (reference counting still frees what it drops). Their allocations set off full passes, each walking
    the whole heap holding the GIL: loading a 100k-document BM25 index stalled the aggregator's event loop
    377-398 ms (bench.lexical_load; at 30k documents the longest stall, 157 ms, was a full pass)."""
    if _Holds.count == 0:
        gc.disable()
    _Holds.count += 1
    try:
        yield
    finally:
        _Holds.count -= 1
        if _Holds.count == 0:
            gc.enable()
