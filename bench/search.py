"""Search latency through the gateway as an organization grows: GET /api/memory?q=… at 1k, 10k, 100k chunks.

`python -m bench.search [--sizes 1000,10000] [--requests 300] [--concurrency 4]`
(`--sizes 1000,10000,100000` for the full report).

The indexer, aggregator and gateway run as their own processes, local embeddings on (hybrid search:
lexical BM25 leg + dense leg, fused). The big organization's corpus is written straight into
PostgreSQL (bench/dataset.py), grown step by step to each size; ANALYZE runs after every load. A small
organization (60 documents) beside it is indexed by the real pipeline, and a few of its passages are
also bulk-loaded into a third organization to prove the loader writes what the indexer writes
(bench/fidelity.py). At each size: a warm-up (until the aggregator has loaded the org's BM25 index), then
`--requests` searches from `--concurrency` clients at once (asyncio with a minimal keep-alive HTTP client,
bench/http_client.py), queries drawn from the corpus vocabulary; p50/p95/p99/mean, the CPU each
process spent per request, then the growth factors between sizes. Every query is sent once, except in
one run made to repeat them: the aggregator keeps recent query vectors, so the measured searches
embed every query, and then the same searches are sent again (as a next page or a facet clicked
beside a search would be) to show what the kept vectors save. A sanity check searches the small
organization (it must find its own documents, and only those), and its latency is measured too, as is
one client alone, and the facet counts of the measured queries (`GET /api/memory/facets?q=`). With
`--explain` (the default, embedded PostgreSQL only) every statement of one search
is captured from the server log and EXPLAIN ANALYZEd (bench/explain.py; plans in
bench/results/search-explain.txt).

THE BULK VECTORS ARE SYNTHETIC: `--real-vectors` passages are embedded with the local model; every
other passage carries a real vector of its topic plus small noise, renormalized. See bench/dataset.py.

For context, the bare cost of embedding one query with the local model in this process is measured
too (before the services start, so nothing competes for the CPU).
"""

import argparse
import asyncio
import itertools
import json
import os
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import httpx
import numpy as np

from bench import dataset
from bench.corpus import TextGenerator
from bench.cpu import CpuMeter, busy_cores, usage
from bench.dataset import Passage, SyntheticVectors, Vectors
from bench.explain import Explained, explain_search
from bench.fidelity import compare_documents
from bench.harness import RESULTS_DIR, Deployment, Member, deployment, new_member
from bench.http_client import HttpError, KeepAliveClient
from bench.publishing import Document, publish_and_wait
from bench.report import environment, latency_summary, table, write_json
from cortex_embedding.local_model import load_local_embedder
from cortex_messaging.connection import connect, disconnect
from cortex_store.database import asyncpg_dsn

SMALL_ORG_PASSAGES = 60
SMALL_ORG_REQUESTS = 100
FIDELITY_PASSAGES = 3
IDLE_CORES = 0.15
EXPLAIN_FILE = RESULTS_DIR / "search-explain.txt"


@dataclass(frozen=True)
class Corpus:
    big: list[Passage]
    small: list[Passage]
    real_vectors: Vectors  # for big[:len(real_vectors)]
    small_vectors: Vectors
    queries: list[str]  # sent once each (QueryDeck), except by the run that repeats the measured ones


class QueryDeck:
    """Queries never sent before, handed out in order."""

    def __init__(self, queries: list[str]) -> None:
        self._queries = queries
        self._next = 0

    def take(self, n: int) -> list[str]:
        if self._next + n > len(self._queries):
            raise RuntimeError(f"the bench drew {len(self._queries)} distinct queries: too few for this run")
        taken = self._queries[self._next : self._next + n]
        self._next += n
        return taken


def queries_per_size(args: argparse.Namespace) -> int:
    return int(args.requests + 2 * args.warmup + SMALL_ORG_REQUESTS + args.single_requests)  # warm-ups: search, facets


@dataclass(frozen=True)
class Run:
    latencies: list[float]
    errors: dict[str, int]
    seconds: float
    empty_results: int


async def fire(
    base_url: str,
    headers: dict[str, str],
    queries: Sequence[str],
    total: int,
    concurrency: int,
    limit: int,
    *,
    facets: bool = False,
) -> Run:
    """`total` searches from `concurrency` clients, each sending its next request when the last returns
    (with `facets`, the facet counts of each query instead: `GET /api/memory/facets?q=`)."""
    counter = itertools.count()
    latencies: list[float] = []
    errors: dict[str, int] = {}
    empty = 0

    async def client() -> None:
        nonlocal empty
        async with KeepAliveClient(base_url, headers) as http:
            while (index := next(counter)) < total:
                q = queries[index % len(queries)]
                started = time.perf_counter()
                try:
                    if facets:
                        status, raw = await http.get("/api/memory/facets", {"q": q})
                    else:
                        status, raw = await http.get("/api/memory", {"q": q, "limit": limit})
                    body = json.loads(raw)
                except (HttpError, ValueError) as exc:
                    errors[type(exc).__name__] = errors.get(type(exc).__name__, 0) + 1
                    continue
                elapsed = time.perf_counter() - started
                if status != 200:
                    errors[str(status)] = errors.get(str(status), 0) + 1
                    continue
                latencies.append(elapsed)
                empty += not (body["status"] if facets else body["items"])  # every document has a status

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(concurrency)))
    return Run(latencies, errors, time.perf_counter() - started, empty)


async def search_ids(base_url: str, member: Member, q: str, limit: int = 50) -> list[str]:
    async with httpx.AsyncClient(base_url=base_url, headers=member.headers, timeout=60) as http:
        response = await http.get("/api/memory", params={"q": q, "limit": limit})
        response.raise_for_status()
        return [item["id"] for item in response.json()["items"]]


async def org_document_ids(connection: Any, org: uuid.UUID) -> set[str]:
    rows = await connection.fetch("SELECT id FROM kb_documents WHERE organization_id = $1", org)
    return {str(row["id"]) for row in rows}


async def sanity(dep: Deployment, connection: Any, big: Member, small: Member, corpus: Corpus) -> dict[str, Any]:
    """A search in the small org finds its own documents and nothing else; the big org's never shows them."""
    q = corpus.small[0].title
    small_ids = await org_document_ids(connection, small.org_id)
    wanted = str(
        await connection.fetchval(
            "SELECT id FROM kb_documents WHERE organization_id = $1 AND body = $2", small.org_id, corpus.small[0].text
        )
    )
    found_small = await search_ids(dep.base_url, small, q)
    found_big = await search_ids(dep.base_url, big, q)
    assert found_small, f"a search for {q!r} in the small organization found nothing"
    assert set(found_small) <= small_ids, "the small organization's search returned another organization's items"
    assert not set(found_big) & small_ids, "the big organization's search returned the small organization's items"
    assert wanted in found_small[:10], f"the document titled {q!r} is not in the small org's top 10 for its title"
    return {
        "query": q,
        "small_org_results": len(found_small),
        "rank_of_titled_document": found_small.index(wanted) + 1,
        "big_org_results": len(found_big),
    }


def _measure_query_embedding(queries: Sequence[str]) -> dict[str, Any]:
    """One query at a time, as the aggregator embeds them: the int8 copy it uses by default and the fp32
    model on one thread (its setting), and fp32 on the backend's default threads (one per core)."""
    summaries: dict[str, Any] = {}
    for label, threads, int8 in (
        ("int8_1_thread", 1, True),
        ("fp32_1_thread", 1, False),
        ("fp32_default_threads", None, False),
    ):
        model = load_local_embedder(threads=threads, int8=int8)
        assert model is not None
        for q in queries[:10]:
            model.embed([q])
        seconds = []
        for q in queries[:200]:
            started = time.perf_counter()
            model.embed([q])
            seconds.append(time.perf_counter() - started)
        summaries[label] = latency_summary(seconds)
        summaries["backend"] = type(model).__name__
    return summaries


def distinct_queries(seed: int, count: int) -> list[str]:
    asker = TextGenerator(seed)
    queries: dict[str, None] = {}
    for _ in range(count * 20):  # the generator can make ~14k distinct ones
        queries[asker.query()] = None
        if len(queries) == count:
            break
    return list(queries)


def build_corpus(args: argparse.Namespace, sizes: Sequence[int]) -> tuple[Corpus, dict[str, float]]:
    generator = TextGenerator(args.seed)
    big = dataset.make_passages(generator, sizes[-1])
    small = dataset.make_passages(generator, SMALL_ORG_PASSAGES)
    queries = distinct_queries(args.seed + 1, len(sizes) * queries_per_size(args))
    model = load_local_embedder()
    if model is None:
        raise SystemExit("the local embedding model is not installed: search would be lexical-only")
    real_count = min(args.real_vectors, len(big))
    print(f"embedding {real_count} + {len(small)} real passages with the local model…", flush=True)
    real = np.array(model.embed([p.embedding_input() for p in big[:real_count]]), dtype=np.float32)
    small_vectors = np.array(model.embed([p.embedding_input() for p in small]), dtype=np.float32)
    query_cost = _measure_query_embedding(queries)
    corpus = Corpus(big, small, real, small_vectors, queries)
    return corpus, query_cost


def lexical_index_loads(dep: Deployment, member: Member) -> int:
    """How often the aggregator has logged loading the organization's in-memory BM25 index."""
    return dep.logs["aggregator"].read_text().count(f"lexical index of {member.org_id} loaded")


async def lexical_index_loaded(dep: Deployment, member: Member, before: int, limit: float = 600.0) -> float:
    """Wait until the aggregator has loaded the organization's BM25 index again (each size's bulk load makes
    it load afresh; SQL ranks meanwhile), so the measured run sees the steady state. Seconds waited."""
    started = time.perf_counter()
    if os.environ.get("CORTEX_AGGREGATOR_LEXICAL_INDEX_MAX_ORGANIZATIONS") == "0":  # BM25 in SQL only
        return 0.0
    while lexical_index_loads(dep, member) <= before:
        if time.perf_counter() - started > limit:
            raise RuntimeError(f"the aggregator did not load the lexical index of {member.slug} in {limit:.0f} s")
        await asyncio.sleep(0.5)
    return time.perf_counter() - started


async def settle_seconds(meter: CpuMeter, limit: float = 300.0) -> float:
    """How long the aggregator and PostgreSQL keep working after the last answer (requests the gateway
    gave up on are still being computed); waits until they are idle so the next phase starts clean."""
    started = time.perf_counter()
    while time.perf_counter() - started < limit:
        if await asyncio.to_thread(busy_cores, meter, ("aggregator", "postgres")) < IDLE_CORES:
            break
    return time.perf_counter() - started


def _ms_per_request(cpu: dict[str, float], requests: int) -> dict[str, float]:
    """CPU-ms per request of each process (`usage`'s other entries, wall and cores, left out)."""
    return {name: 1000 * seconds / requests for name, seconds in cpu.items() if name not in ("wall", "cores")}


async def measure_size(
    dep: Deployment, big: Member, small: Member, deck: QueryDeck, size: int, args: argparse.Namespace
) -> dict[str, Any]:
    queries = deck.take(args.requests)
    loads_before = lexical_index_loads(dep, big)
    warmup = await fire(dep.base_url, big.headers, deck.take(args.warmup), args.warmup, args.concurrency, args.limit)
    if warmup.errors:
        print(f"        warm-up errors at {size:,} chunks: {warmup.errors} (504: the gateway's RPC timeout)")
    waited = await lexical_index_loaded(dep, big, loads_before)
    meter = CpuMeter(dep.pids)
    before = meter.snapshot()
    run = await fire(dep.base_url, big.headers, queries, args.requests, args.concurrency, args.limit)
    cpu = usage(before, meter.snapshot())
    settle = await settle_seconds(meter)
    served = max(1, args.requests)  # answered or not, each request cost what it cost
    cpu_ms = _ms_per_request(cpu, served)
    before = meter.snapshot()
    again = await fire(dep.base_url, big.headers, queries, args.requests, args.concurrency, args.limit)
    cpu_again = usage(before, meter.snapshot())
    await settle_seconds(meter)
    small_run = await fire(
        dep.base_url, small.headers, deck.take(SMALL_ORG_REQUESTS), SMALL_ORG_REQUESTS, args.concurrency, args.limit
    )
    alone = await fire(dep.base_url, big.headers, deck.take(args.single_requests), args.single_requests, 1, args.limit)
    # (a warm-up first: the organization's first facet request loads its facet index, ~1 s at 100k)
    warm = deck.take(args.warmup)
    await fire(dep.base_url, big.headers, warm, args.warmup, args.concurrency, args.limit, facets=True)
    facets = await fire(dep.base_url, big.headers, queries, args.requests, args.concurrency, args.limit, facets=True)
    return {
        "size": size,
        "latency_ms": latency_summary(run.latencies) if run.latencies else None,
        "requests": args.requests,
        "errors": run.errors,
        "empty_results": run.empty_results,
        "throughput_rps": len(run.latencies) / run.seconds,
        "small_org_latency_ms": latency_summary(small_run.latencies) if small_run.latencies else None,
        "small_org_errors": small_run.errors,
        "single_client_latency_ms": latency_summary(alone.latencies) if alone.latencies else None,
        "warmup_errors": warmup.errors,
        "waited_for_lexical_index_seconds": waited,
        "busy_after_last_answer_seconds": settle,
        "cpu_ms_per_request": cpu_ms,
        "cpu_busy_share": sum(cpu_ms.values()) * served / 1000 / (cpu["wall"] * cpu["cores"]),
        "repeated_latency_ms": latency_summary(again.latencies) if again.latencies else None,
        "repeated_errors": again.errors,
        "repeated_cpu_ms_per_request": _ms_per_request(cpu_again, served),
        "facets_latency_ms": latency_summary(facets.latencies) if facets.latencies else None,
        "facets_errors": facets.errors,
        "facets_empty": facets.empty_results,
    }


async def load_small_org(dep: Deployment, connection: Any, small: Member, corpus: Corpus, now: datetime) -> str:
    """The small org goes through the real pipeline; a few of its passages are bulk-loaded into a third
    org too, and both versions must agree (bench/fidelity.py)."""
    documents = [Document(uuid.uuid4(), p.title, p.text) for p in corpus.small]
    nc = await connect(dep.nats_url, name="bench-search")
    try:
        await publish_and_wait(nc, small.org_id, documents, timeout=600)
    finally:
        await disconnect(nc)
    probe = await new_member(dep, "bench-fidelity")
    count = FIDELITY_PASSAGES
    await dataset.insert_passages(
        connection, probe.org_id, corpus.small[:count], corpus.small_vectors[:count], now=now, seed=2
    )
    differences: list[str] = []
    for document in documents[:count]:
        loaded = await connection.fetchval(
            "SELECT id FROM kb_documents WHERE organization_id = $1 AND body = $2", probe.org_id, document.body
        )
        differences += await compare_documents(connection, document.id, loaded)
    if differences:
        raise RuntimeError("bulk-loaded rows differ from the indexer's:\n  " + "\n  ".join(differences))
    return f"{count} of its passages bulk-loaded elsewhere match the indexer's rows column for column ✓"


async def run_sizes(dep: Deployment, corpus: Corpus, sizes: Sequence[int], args: argparse.Namespace) -> dict[str, Any]:
    big = await new_member(dep, "bench-big")
    small = await new_member(dep, "bench-small")
    connection = await dataset.connect(asyncpg_dsn(dep.database_url))
    synthetic = SyntheticVectors(
        corpus.real_vectors, [p.topic for p in corpus.big[: len(corpus.real_vectors)]], args.noise, args.seed
    )
    results: list[dict[str, Any]] = []
    plans: dict[str, list[Explained]] = {}
    now = dataset.utc_now()
    try:
        versions = await dataset.server_versions(connection)
        fidelity = await load_small_org(dep, connection, small, corpus, now)
        print(f"small org: {len(corpus.small)} documents indexed by the real pipeline; {fidelity}", flush=True)
        loaded = 0
        deck = QueryDeck(corpus.queries)
        for size in sizes:
            started = time.perf_counter()
            real_end = min(size, len(corpus.real_vectors))
            if loaded < real_end:
                await dataset.insert_passages(
                    connection,
                    big.org_id,
                    corpus.big[loaded:real_end],
                    corpus.real_vectors[loaded:real_end],
                    now=now,
                    seed=loaded,
                )
                loaded = real_end
            if loaded < size:
                rest = corpus.big[loaded:size]
                await dataset.insert_passages(
                    connection, big.org_id, rest, synthetic.for_passages(rest), now=now, seed=loaded
                )
                loaded = size
            await dataset.vacuum_analyze(connection)
            load_seconds = time.perf_counter() - started
            print(f"{size:>7} chunks loaded (+VACUUM ANALYZE in {load_seconds:.1f} s); measuring…", flush=True)
            check = await sanity(dep, connection, big, small, corpus)
            print(
                f"        sanity: small org search {check['query']!r} → {check['small_org_results']} of its own "
                f"documents, that title's document #{check['rank_of_titled_document']}; big org shows none of them ✓",
                flush=True,
            )
            result = await measure_size(dep, big, small, deck, size, args)
            result |= {"load_seconds": load_seconds, "sanity": check, "storage": await dataset.storage(connection)}
            if args.explain and dep.postgres_log is not None:
                q = corpus.queries[0]
                result["explain_query"] = q
                for key, member in (("explain_ms", big), ("explain_ms_small_org", small)):

                    async def probe(q: str = q, member: Member = member) -> list[str]:
                        return await search_ids(dep.base_url, member, q, args.limit)  # a page as measured

                    explained = await explain_search(connection, dep.postgres_log, probe)
                    plans[f"{'big' if member is big else 'small'} org, {size:,} chunks"] = explained
                    result[key] = [
                        {"statement": e.label, "in_situ": e.in_situ_ms, "custom": e.custom_ms, "generic": e.generic_ms}
                        for e in explained
                    ]
            results.append(result)
            _print_size(result)
    finally:
        await connection.close()
    if plans:
        _write_plans(plans)
    return {"sizes": results, "servers": versions, "big_org": big.slug, "small_org": small.slug}


def _print_size(result: dict[str, Any]) -> None:
    latency = result["latency_ms"]
    if latency is None:
        print(f"        no successful request: {result['errors']}")
        return
    print(
        f"        p50 {latency['p50']:.1f} ms  p99 {latency['p99']:.1f} ms  "
        f"({result['throughput_rps']:.1f} req/s, errors {result['errors'] or 'none'}; aggregator and PostgreSQL "
        f"busy {result['busy_after_last_answer_seconds']:.1f} s after the last answer; warm-up waited "
        f"{result['waited_for_lexical_index_seconds']:.1f} s for the in-memory BM25 index)",
        flush=True,
    )
    repeated = result["repeated_latency_ms"]
    if repeated is not None:
        print(
            f"        the same searches again (query vectors kept): p50 {repeated['p50']:.1f} ms  p99 "
            f"{repeated['p99']:.1f} ms; aggregator CPU {result['repeated_cpu_ms_per_request']['aggregator']:.1f} "
            f"ms a search, against {result['cpu_ms_per_request']['aggregator']:.1f} when each was new",
            flush=True,
        )
    facets = result["facets_latency_ms"]
    if facets is not None:
        print(
            f"        the facet counts of the same queries (GET /api/memory/facets?q=): p50 {facets['p50']:.1f} ms  "
            f"p99 {facets['p99']:.1f} ms (errors {result['facets_errors'] or 'none'}, "
            f"{result['facets_empty']} counting nothing)",
            flush=True,
        )


def _write_plans(plans: dict[str, list[Explained]]) -> None:
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    with EXPLAIN_FILE.open("w") as out:
        for where, explained in plans.items():
            for e in explained:
                out.write(f"===== {where}: {e.label} — in situ {e.in_situ_ms:.2f} ms\n{e.sql.strip()}\n\n")
                out.write(f"----- custom plan ({e.custom_ms} ms)\n{e.custom_plan}\n\n")
                out.write(f"----- generic plan ({e.generic_ms} ms)\n{e.generic_plan}\n\n")


def _growth(results: Sequence[dict[str, Any]], metric: str) -> list[str]:
    factors = []
    for smaller, larger in itertools.pairwise(results):
        if smaller["latency_ms"] and larger["latency_ms"]:
            factor = larger["latency_ms"][metric] / smaller["latency_ms"][metric]
            factors.append(f"{smaller['size']:,}→{larger['size']:,}: ×{factor:.2f}")
    return factors


def _triple(e: dict[str, Any]) -> str:
    def ms(value: float | None) -> str:
        return "-" if value is None else f"{value:.1f}"

    return f"{ms(e['in_situ'])} / {ms(e['custom'])} / {ms(e['generic'])}"


def _print_report(report: dict[str, Any]) -> None:
    sizes = report["sizes"]
    print()
    print(
        f"Search: GET /api/memory?q=…&limit={report['parameters']['limit']}, "
        f"{report['parameters']['concurrency']} concurrent clients, {report['parameters']['requests']} requests "
        f"per size after {report['parameters']['warmup']} warm-up; hybrid (local query embeddings on); "
        f"{report['parameters']['aggregators']} aggregator process(es)"
    )
    print(
        f"corpus: one chunk per document; {report['parameters']['real_vectors']} real vectors, THE REST SYNTHETIC "
        f"(real vector of the same topic + N(0, {report['parameters']['noise']}²) noise, renormalized)"
    )
    rows = []
    for r in sizes:
        lat = r["latency_ms"] or {}
        small = r["small_org_latency_ms"] or {}
        alone = r["single_client_latency_ms"] or {}
        rows.append(
            [
                f"{r['size']:,}",
                lat.get("p50", float("nan")),
                lat.get("p95", float("nan")),
                lat.get("p99", float("nan")),
                lat.get("mean", float("nan")),
                r["throughput_rps"],
                sum(r["errors"].values()),
                small.get("p50", float("nan")),
                small.get("p99", float("nan")),
                alone.get("p50", float("nan")),
            ]
        )
    headers = [
        "chunks",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "mean ms",
        "req/s",
        "errors",
        "small p50",
        "small p99",
        "1-client p50",
    ]
    print(table(headers, rows))
    if len(sizes) > 1:
        print("growth p50: " + "; ".join(_growth(sizes, "p50")))
        print("growth p99: " + "; ".join(_growth(sizes, "p99")))
    print("CPU-ms per request, by process (during the measured run; `other` = the rest of the machine):")
    for r in sizes:
        parts = ", ".join(f"{name} {ms:.1f}" for name, ms in r["cpu_ms_per_request"].items())
        print(
            f"  {r['size']:>7,}: {parts}; still busy {r['busy_after_last_answer_seconds']:.0f} s after the last answer"
        )
    embed = report["query_embedding_ms"]
    per_threads = "; ".join(
        f"{key.replace('_', ' ')}: p50 {value['p50']:.1f} ms, p99 {value['p99']:.1f} ms"
        for key, value in embed.items()
        if isinstance(value, dict)
    )
    print(f"bare query embedding (one query at a time, this process, before the services start) — {per_threads}")
    for r in sizes:
        tables = r["storage"]["tables"]
        print(
            f"  storage at {r['size']:,}: "
            + ", ".join(
                f"{name} heap {t['heap_bytes'] / 2**20:.0f} MiB + toast {t['toast_bytes'] / 2**20:.0f} MiB "
                f"+ indexes {t['index_bytes'] / 2**20:.0f} MiB"
                for name, t in tables.items()
            )
        )
    explained = [r for r in sizes if "explain_ms" in r]
    for key, who in (("explain_ms", "the big org"), ("explain_ms_small_org", "the small org (60 documents)")):
        labels = list(dict.fromkeys(e["statement"] for r in explained for e in r.get(key, [])))
        if not labels:
            continue
        print(
            f"\nOne search in {who}, statement by statement (query {explained[0]['explain_query']!r}); "
            "ms as run by the service / EXPLAIN ANALYZE custom plan / generic plan:"
        )
        rows = []
        for name in labels:
            row: list[object] = [name]
            for r in explained:
                entry = next((e for e in r.get(key, []) if e["statement"] == name), None)
                row.append(_triple(entry) if entry else "-")
            rows.append(row)
        print(table(["statement", *(f"{r['size']:,}" for r in explained)], rows))
    if explained:
        print(f"plans: {EXPLAIN_FILE}")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.search", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000", help="chunk counts, ascending (default 1000,10000)")
    parser.add_argument("--requests", type=int, default=300, help="measured requests per size (default 300)")
    parser.add_argument("--warmup", type=int, default=40, help="warm-up requests per size (default 40)")
    parser.add_argument("--concurrency", type=int, default=4, help="concurrent clients (default 4)")
    parser.add_argument(
        "--aggregators", type=int, default=1, help="aggregator copies, as `cortex run --aggregators N` (default 1)"
    )
    parser.add_argument("--single-requests", type=int, default=60, help="requests from one client alone")
    parser.add_argument("--limit", type=int, default=20, help="page size asked for (default 20)")
    parser.add_argument("--real-vectors", type=int, default=400, help="passages embedded for real (default 400)")
    parser.add_argument("--noise", type=float, default=0.025, help="σ of the noise on synthetic vectors")
    parser.add_argument("--seed", type=int, default=11, help="corpus seed (default 11)")
    parser.add_argument("--explain", action=argparse.BooleanOptionalAction, default=True, help="EXPLAIN ANALYZE")
    args = parser.parse_args(argv)
    args.size_list = [int(s) for s in args.sizes.split(",") if s.strip()]
    if args.size_list != sorted(set(args.size_list)) or not args.size_list:
        parser.error("--sizes must be distinct chunk counts in ascending order")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sizes: list[int] = args.size_list
    load_before = os.getloadavg()
    corpus, query_cost = build_corpus(args, sizes)
    copies = f" ({args.aggregators} copies)" if args.aggregators > 1 else ""
    print(f"starting PostgreSQL, NATS, indexer, aggregator{copies} and gateway…", flush=True)
    with deployment("search", aggregators=args.aggregators) as dep:
        measured = asyncio.run(run_sizes(dep, corpus, sizes, args))
    report: dict[str, Any] = {
        "benchmark": "search",
        "environment": environment() | {"load_average_before": load_before, "load_average_after": os.getloadavg()},
        "parameters": {
            "sizes": sizes,
            "requests": args.requests,
            "warmup": args.warmup,
            "concurrency": args.concurrency,
            "aggregators": args.aggregators,
            "limit": args.limit,
            "real_vectors": min(args.real_vectors, sizes[-1]),
            "noise": args.noise,
            "seed": args.seed,
            "small_org_documents": SMALL_ORG_PASSAGES,
            "vectors": "synthetic beyond the real ones: real vector of the same topic + Gaussian noise, renormalized",
        },
        "query_embedding_ms": query_cost,
        **measured,
    }
    path = write_json("search", report)
    _print_report(report)
    print(f"\nwritten to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
