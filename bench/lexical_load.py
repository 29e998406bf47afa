"""How long the aggregator's event loop stalls while an organization's in-memory BM25 index loads.

`python -m bench.lexical_load [--documents 100000] [--rounds 2]`

N one-passage documents (bench/search's corpus, clustered random vectors) are bulk-loaded into an embedded
PostgreSQL; then `LexicalIndexes` loads the organization's index `--rounds` times in this process, as the
aggregator does on a first search, while a probe task sleeps 1 ms at a time and records how long each
sleep really took. Every search the aggregator is serving waits out the longest of those gaps.
"""

import argparse
import asyncio
import time
from typing import Any

import numpy as np
import uvloop
from numpy.typing import NDArray

from bench import dataset
from bench.corpus import TextGenerator
from bench.harness import infrastructure
from cortex_aggregator.lexical_indexes import LexicalIndexes
from cortex_cli.organizations import ensure_membership
from cortex_store.database import asyncpg_dsn, make_engine, make_sessionmaker
from cortex_store.migrate import upgrade_async
from cortex_store.models import MemberRole

STALL_MS = 50


async def _probe(stop: asyncio.Event, gaps: list[float]) -> None:
    last = time.perf_counter()
    while not stop.is_set():
        await asyncio.sleep(0.001)
        now = time.perf_counter()
        gaps.append(now - last)
        last = now


def _clustered_vectors(count: int, clusters: int = 50, noise: float = 0.025) -> NDArray[np.float32]:
    """Unit vectors around a few centres, as real embeddings cluster by topic. The BM25 index ignores them;
    the HNSW graph takes uniformly random ones ~2x slower (100k here: 818 s, against 424-442)."""
    rng = np.random.default_rng(1)
    centres = rng.standard_normal((clusters, 384))
    vectors = centres[rng.integers(0, clusters, count)] / np.sqrt(384) + rng.normal(0, noise, (count, 384))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.asarray(vectors, dtype=np.float32)


async def run(infra: Any, documents: int, rounds: int) -> None:
    await upgrade_async(infra.database_url)
    org = await ensure_membership(infra.database_url, "lexical-load", "bench", MemberRole.ADMIN, create=True)
    connection = await dataset.connect(asyncpg_dsn(infra.database_url))
    passages = dataset.make_passages(TextGenerator(11), documents)
    vectors = _clustered_vectors(documents)
    started = time.perf_counter()
    await dataset.insert_passages(connection, org, passages, vectors, now=dataset.utc_now(), seed=0)
    await dataset.vacuum_analyze(connection)
    await connection.close()
    print(f"{documents} documents loaded in {time.perf_counter() - started:.0f} s", flush=True)
    engine = make_engine(infra.service_database_url, pool_size=2)
    try:
        for number in range(1, rounds + 1):
            indexes = LexicalIndexes(make_sessionmaker(engine))
            gaps: list[float] = []
            stop = asyncio.Event()
            probe = asyncio.create_task(_probe(stop, gaps))
            started = time.perf_counter()
            await indexes.wait_loaded(org)
            seconds = time.perf_counter() - started
            await asyncio.sleep(1.0)  # (what follows the load, too)
            stop.set()
            await probe
            ms = np.array(gaps) * 1000
            stalls = ms[ms > STALL_MS]
            print(
                f"round {number}: index loaded in {seconds:.1f} s; the loop's longest gap {ms.max():.0f} ms, "
                f"p99.9 {np.percentile(ms, 99.9):.0f} ms; {len(stalls)} gaps over {STALL_MS} ms, "
                f"{stalls.sum():.0f} ms in all",
                flush=True,
            )
    finally:
        await engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--documents", type=int, default=100_000, help="documents of one passage (default 100000)")
    parser.add_argument("--rounds", type=int, default=2, help="loads of the index (default 2)")
    args = parser.parse_args()
    with infrastructure() as infra:
        uvloop.run(run(infra, args.documents, args.rounds))


if __name__ == "__main__":
    main()
