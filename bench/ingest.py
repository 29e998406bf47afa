"""Ingest throughput: KB events in, searchable documents out, against the bare embedder.

`python -m bench.ingest [-n 300] [--seed 7]`
`python -m bench.ingest --mix [-n 300] [--rounds 5]`

N synthetic markdown documents (~1 KB, one or two `##` sections) are published as
`kb.<orgId>.document.upserted` events to a fresh organization, as an upstream KB service would. The
clock runs from the first publish until the indexer has reported every document with
`cortex.<orgId>.document.indexed`; then one walk through GET /api/memory over HTTP confirms the
organization holds exactly those N documents, and one search finds a document by its title.

With `--mix` the same documents are written as files, in turn markdown, PDF and DOCX
(bench/documents_mix.py), and ingested as `cortex ingest` does: markdown inline, PDF and DOCX through
the Object Store and `kb.<orgId>.upload.created`, so the indexer extracts them. The bare embedder gets
the passages of the text this process extracted from the same files with the same extractors, and, as the
indexer, each upload's file-name passage.

The same run measures the bare embedder: this process loads the local model and embeds exactly the
same passages (chunk_document(title, body) → embedding_input()) — once before the pipeline and once
after, never while the pipeline runs (the indexer loads its own model). Each time it runs the model two
ways: one call on every core, as the model loads by default, and one single-threaded call per core at
once (as the indexer runs it with CORTEX_INDEXER_EMBEDDING_STREAMS). The figure of merit is pipeline
docs/s ÷ the mean of the faster way's docs/s, before and after (goal ≥ 0.85). With `--rounds N` the
pipeline runs N times (a fresh organization each time), each run between two bare runs, and the median
round's ratio counts: on a shared machine one run's ratio moves by ±0.1. The indexer logs how it batched
the embedding work when it stops (`embedding batches: …`); the report shows that next to the bare
run's padding, estimated the same way (word counts, sliced as the local model slices: slicing.py).
"""

import argparse
import asyncio
import os
import re
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import httpx
from nats.js import JetStreamContext

from bench import documents_mix
from bench.corpus import TextGenerator
from bench.cpu import CpuMeter, describe, usage
from bench.harness import Deployment, Member, deployment, new_member
from bench.publishing import Document, IndexedLog, upsert_event, wait_with_progress
from bench.report import environment, table, write_json
from cortex_cli.ingest import IngestOptions, ingest_file
from cortex_contracts import subjects
from cortex_embedding.batcher import approximate_tokens
from cortex_embedding.local_model import LocalModel, load_local_embedder
from cortex_embedding.slicing import padded_tokens
from cortex_indexer.chunking import chunk_document
from cortex_messaging.buckets import Buckets
from cortex_messaging.connection import connect, disconnect
from cortex_messaging.publisher import publish_event
from cortex_store.database import asyncpg_dsn

# For the run's fresh organization: the documents to expect in the index, and how to publish them.
Publish = Callable[[JetStreamContext], Awaitable[None]]
Workload = Callable[[Member], tuple[list[Document], Publish]]

GOAL_RATIO = 0.85
PAGE_SIZE = 100
WARMUP_TEXTS = 64
BATCH_LOG = re.compile(r"embedding batches: (?P<fields>.*)$", re.MULTILINE)


def make_documents(n: int, seed: int, target_bytes: int) -> list[Document]:
    generator = TextGenerator(seed)
    documents = []
    for _ in range(n):
        title, body = generator.markdown_document(target_bytes)
        documents.append(Document(uuid.uuid4(), title, body))
    return documents


def embedding_inputs(documents: list[Document]) -> list[str]:
    return [chunk.embedding_input() for doc in documents for chunk in chunk_document(doc.title, doc.body)]


def markdown_events(documents: list[Document]) -> Workload:
    """`kb.<org>.document.upserted` events with the body inline, as an upstream KB service publishes them."""

    def prepare(member: Member) -> tuple[list[Document], Publish]:
        # Ids of this organization's own: a document id belongs to one organization (each round has its own).
        own = [Document(uuid.uuid5(member.org_id, str(doc.id)), doc.title, doc.body) for doc in documents]
        events = [upsert_event(member.org_id, doc) for doc in own]
        subject = subjects.kb_document_upserted(member.org_id)

        async def publish(js: JetStreamContext) -> None:
            for event in events:
                await publish_event(js, subject, event)

        return own, publish

    return prepare


def mixed_files(files: list[documents_mix.MixedFile], expected: list[documents_mix.ExpectedText]) -> Workload:
    """The files as `cortex ingest` publishes them (PDF and DOCX through the Object Store)."""

    def prepare(member: Member) -> tuple[list[Document], Publish]:
        options = IngestOptions(organization_id=member.org_id, work_id=None, doc_class=None, tags=())
        documents = [
            Document(documents_mix.document_id(options, file, text), text.title, text.text)
            for file, text in zip(files, expected, strict=True)
        ]

        async def publish(js: JetStreamContext) -> None:
            buckets = Buckets(js)
            for file in files:
                await ingest_file(buckets, file.path, options)

        return documents, publish

    return prepare


def bare_padding(texts: list[str]) -> dict[str, Any]:
    """The bare run's padding, estimated as the batcher estimates the pipeline's (one sorted call)."""
    lengths = [approximate_tokens(text) for text in texts]
    padded = padded_tokens(lengths)
    return {
        "texts_per_call": len(texts),
        "tokens": sum(lengths),
        "padded_tokens": padded,
        "padding": padded / sum(lengths),
    }


def indexer_batches(log: Path) -> dict[str, float] | None:
    """The indexer's `embedding batches: key=value …` line, logged when it stopped (None if it did not)."""
    try:
        found = BATCH_LOG.findall(log.read_text(errors="replace"))
    except OSError:
        return None
    if not found:
        return None
    fields = dict(item.split("=", 1) for item in found[-1].split())
    return {key: float(value) for key, value in fields.items()}


@dataclass(frozen=True)
class BareModel:
    """One way to run the bare model: `streams` calls at once, each on a share of the texts."""

    label: str
    model: LocalModel
    streams: int


def bare_models() -> list[BareModel] | None:
    """The model as a service loads it (one call on every core), and as the indexer can run it (one
    single-threaded call per core). The faster of the two is the reference."""
    default, single = load_local_embedder(), load_local_embedder(threads=1)
    if default is None or single is None:
        return None
    cores = os.cpu_count() or 1
    return [BareModel("one call", default, 1), BareModel(f"{cores} calls at once, 1 thread each", single, cores)]


def measure_bare(bare: BareModel, texts: list[str], documents: int, meter: CpuMeter) -> dict[str, Any]:
    parts = [texts[start :: bare.streams] for start in range(bare.streams)]  # interleaved: alike in length
    before = meter.snapshot()
    started = time.perf_counter()
    with ThreadPoolExecutor(bare.streams) as pool:
        embedded = sum(len(vectors) for vectors in pool.map(bare.model.embed, parts))
    seconds = time.perf_counter() - started
    cpu = usage(before, meter.snapshot())
    assert embedded == len(texts)
    return {
        "label": bare.label,
        "seconds": seconds,
        "docs_per_s": documents / seconds,
        "chunks_per_s": len(texts) / seconds,
        "cpu": cpu,
    }


def measure_bare_all(models: list[BareModel], texts: list[str], documents: int, meter: CpuMeter) -> dict[str, Any]:
    """Every way, one after the other; `best` is the fastest of them."""
    runs = [measure_bare(bare, texts, documents, meter) for bare in models]
    return {"runs": runs, "best": max(runs, key=lambda run: run["docs_per_s"])}


TABLE_ACTIVITY = """
SELECT relname AS table, n_tup_ins AS inserted, n_tup_upd AS updated, n_tup_hot_upd AS hot_updated,
       n_tup_del AS deleted, n_dead_tup AS dead
FROM pg_stat_user_tables WHERE relname = ANY($1::text[]) ORDER BY relname
"""


SESSIONS = "SELECT sessions FROM pg_stat_database WHERE datname = current_database()"


async def sessions_opened(dep: Deployment) -> int:
    """Connections the database has accepted so far (each is a new server process: costly to churn)."""
    connection = await asyncpg.connect(asyncpg_dsn(dep.database_url))
    try:
        return int(await connection.fetchval(SESSIONS))
    finally:
        await connection.close()


# A backend that has gone idle sends its pending table statistics within 10 s (PGSTAT_IDLE_INTERVAL).
STATS_FLUSH_SECONDS = 11.0


async def table_activity(dep: Deployment) -> dict[str, dict[str, int]]:
    """Row writes per table so far (PostgreSQL's statistics, once every backend has sent its own)."""
    await asyncio.sleep(STATS_FLUSH_SECONDS)
    connection = await asyncpg.connect(asyncpg_dsn(dep.database_url))
    try:
        rows = await connection.fetch(TABLE_ACTIVITY, ["kb_documents", "kb_chunks", "kb_postings"])
    finally:
        await connection.close()
    return {
        row["table"]: {k: row[k] for k in ("inserted", "updated", "hot_updated", "deleted", "dead")} for row in rows
    }


async def _confirm(dep: Deployment, member: Member, documents: list[Document]) -> dict[str, Any]:
    """Walk the whole feed over HTTP (exactly the N documents), and find one document by its title."""
    started = time.perf_counter()
    seen: list[str] = []
    async with httpx.AsyncClient(base_url=dep.base_url, headers=member.headers, timeout=30) as client:
        params: dict[str, Any] = {"limit": PAGE_SIZE}
        while True:
            response = await client.get("/api/memory", params=params)
            response.raise_for_status()
            page = response.json()
            seen += [item["id"] for item in page["items"]]
            if not page.get("nextCursor"):
                break
            params = {"limit": PAGE_SIZE, "cursor": page["nextCursor"]}
        probe = documents[len(documents) // 2]
        response = await client.get("/api/memory", params={"q": probe.title, "limit": 20})
        response.raise_for_status()
        found = [item["id"] for item in response.json()["items"]]
    expected = {str(doc.id) for doc in documents}
    assert len(seen) == len(documents), f"feed lists {len(seen)} documents, expected {len(documents)}"
    assert set(seen) == expected, "feed lists other documents than those published"
    assert str(probe.id) in found, f"search for the title {probe.title!r} did not find its document"
    return {
        "seconds": time.perf_counter() - started,
        "feed_documents": len(seen),
        "title_search_rank": found.index(str(probe.id)) + 1,
    }


async def measure_pipeline(
    dep: Deployment, workload: Workload, timeout: float, meter: CpuMeter, *, first_round: bool
) -> dict[str, Any]:
    member = await new_member(dep, "bench-ingest")
    documents, publish = workload(member)
    nc = await connect(dep.nats_url, name="bench-ingest")
    try:
        js = nc.jetstream()
        log = IndexedLog(expected={str(doc.id) for doc in documents})
        subscription = await nc.subscribe(subjects.cortex_document_indexed(member.org_id), cb=log.on_message)
        await nc.flush()
        sessions_before = await sessions_opened(dep)
        cpu_before = meter.snapshot()
        started = time.perf_counter()
        await publish(js)
        published = time.perf_counter()
        await wait_with_progress(log, timeout)
        cpu = usage(cpu_before, meter.snapshot())
        connections = await sessions_opened(dep) - sessions_before - 1  # not the counting connection's own
        finished = max(log.arrivals.values())
        first = min(log.arrivals.values())
        await subscription.unsubscribe()
    finally:
        await disconnect(nc)
    assert not log.not_embedded, f"{len(log.not_embedded)} documents were indexed without embeddings"
    confirmation = await _confirm(dep, member, documents)
    # Counted in the first round only: the tables were empty before it, so the totals are its writes.
    activity = await table_activity(dep) if first_round else {}
    seconds = finished - started
    chunks = sum(log.chunks.values())
    return {
        "organization": member.slug,
        "seconds": seconds,
        "docs_per_s": len(documents) / seconds,
        "chunks_per_s": chunks / seconds,
        "chunks_indexed": chunks,
        "publish_seconds": published - started,
        "first_indexed_after_seconds": first - started,
        "confirmation": confirmation,
        "cpu": cpu,
        "table_activity": activity,
        "connections_opened": connections,
    }


def _print_report(result: dict[str, Any]) -> None:
    bare_before, bare_after = result["bare_before"], result["bare_after"]
    pipeline = result["pipeline"]
    corpus = result["corpus"]
    print()
    kinds = ", ".join(f"{count} {kind}" for kind, count in corpus["kinds"].items())
    print(
        f"Ingest: {corpus['documents']} documents ({kinds}), {corpus['chunks']} chunks, "
        f"{corpus['bytes'] / 1024:.0f} KiB of files (seed {corpus['seed']})"
    )
    if "extraction_seconds" in corpus:
        print(f"extracting the PDF and DOCX files took {corpus['extraction_seconds']:.2f} s in this process")
    rows: list[list[object]] = [
        [f"bare embedder {when}, {run['label']}", run["seconds"], run["docs_per_s"], run["chunks_per_s"]]
        for when, phase in (("before", bare_before), ("after", bare_after))
        for run in phase["runs"]
    ]
    rows += [
        ["bare embedder, mean of the faster", "", result["bare_docs_per_s"], result["bare_chunks_per_s"]],
        ["pipeline, publish→indexed", pipeline["seconds"], pipeline["docs_per_s"], pipeline["chunks_per_s"]],
    ]
    print(table(["measurement", "seconds", "docs/s", "chunks/s"], rows))
    rounds = result["rounds"]
    if len(rounds) > 1:
        print("\nrounds (each pipeline run against the bare runs on either side of it; the tables here are round 1's):")
        processes = ("indexer", "postgres", "nats", "bench")
        print(
            table(
                ["round", "pipeline docs/s", "bare docs/s", "ratio", "CPU-time ratio", "bare CPU-s", *processes],
                [
                    [
                        i,
                        r["pipeline_docs_per_s"],
                        r["bare_docs_per_s"],
                        f"{r['ratio']:.2f}",
                        f"{r['cpu_ratio']:.2f}",
                        f"{r['bare_cpu']:.2f}",
                        *(f"{r['pipeline_cpu'][name]:.2f}" for name in processes),
                    ]
                    for i, r in enumerate(rounds, 1)
                ],
            )
        )
    median = " (median of the rounds)" if len(rounds) > 1 else ""
    verdict = "meets" if result["ratio"] >= GOAL_RATIO else "BELOW"
    print(f"\nratio pipeline/bare = {result['ratio']:.2f}{median}  ({verdict} the goal of ≥ {GOAL_RATIO})")
    print(
        f"CPU-time ratio = {result['cpu_ratio']:.2f}{median}  (bare embedder CPU-seconds ÷ CPU-seconds of every "
        "pipeline process for the same passages; less sensitive to other load on a shared machine)"
    )
    print(
        f"publishing took {pipeline['publish_seconds']:.2f} s; first document indexed after "
        f"{pipeline['first_indexed_after_seconds']:.2f} s; HTTP confirmation: the feed lists "
        f"{pipeline['confirmation']['feed_documents']} documents, a title search ranks its document "
        f"#{pipeline['confirmation']['title_search_rank']} ({pipeline['confirmation']['seconds']:.2f} s)"
    )
    _print_batches(result["bare_padding"], result["indexer_batches"])
    if pipeline["chunks_indexed"] != corpus["chunks"]:
        print(
            f"NOTE: the indexer reported {pipeline['chunks_indexed']} chunks, the bare run embedded {corpus['chunks']}"
        )
    activity = pipeline["table_activity"]
    print(f"database connections opened during the pipeline: {pipeline['connections_opened']}")
    print("row writes during the pipeline (pg_stat_user_tables):")
    print(
        table(
            ["table", "inserted", "updated", "HOT updated", "deleted", "dead now"],
            [[name, *counts.values()] for name, counts in activity.items()],
        )
    )
    print("\nCPU seconds (share of all cores over the phase):")
    phases = [(f"bare before, {run['label']}", run) for run in bare_before["runs"]]
    phases += [("pipeline", pipeline)]
    phases += [(f"bare after, {run['label']}", run) for run in bare_after["runs"]]
    for name, phase in phases:
        print(f"  {name}: {describe(phase['cpu'])}")


def _print_batches(bare: dict[str, Any], indexer: dict[str, float] | None) -> None:
    print("embedding batches (padding = tokens computed ÷ real tokens, estimated from word counts):")
    rows: list[list[object]] = [["bare embedder", 1, bare["texts_per_call"], f"×{bare['padding']:.2f}", ""]]
    if indexer is None:
        rows.append(["pipeline (indexer)", "?", "?", "?", "no `embedding batches` line in the indexer's log"])
    else:
        rows.append(
            [
                "pipeline (indexer)",
                int(indexer["calls"]),
                f"{indexer['texts_per_call']:.1f}",
                f"×{indexer['padding']:.2f}",
                f"{indexer['requests'] / max(indexer['calls'], 1):.1f} requests a call, "
                f"{indexer['linger_seconds']:.2f} s lingering",
            ]
        )
    print(table(["", "model calls", "texts a call", "padding", ""], rows))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.ingest", description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", "--documents", type=int, default=300, help="documents to publish (default 300)")
    parser.add_argument("--seed", type=int, default=7, help="corpus seed (default 7)")
    parser.add_argument("--doc-bytes", type=int, default=1000, help="approximate size of a document (default 1000)")
    parser.add_argument("--timeout", type=float, default=1800, help="longest wait for the indexer, seconds")
    parser.add_argument("--mix", action="store_true", help="markdown, PDF and DOCX files through the upload path")
    parser.add_argument(
        "--rounds", type=int, default=1, help="pipeline runs, each between two bare runs; the median counts (1)"
    )
    parser.add_argument("--label", help="results go to bench/results/<ingest[-mix]>-<label>.json")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    name = "ingest-mix" if args.mix else "ingest"
    with tempfile.TemporaryDirectory(prefix="cx-ingest-") as scratch:
        if args.mix:
            files = documents_mix.write_files(Path(scratch), args.documents, args.seed, args.doc_bytes)
            expected, extraction_seconds = documents_mix.extract_all(files)
            texts = [chunk.embedding_input() for e in expected for chunk in e.passages()]
            workload = mixed_files(files, expected)
            corpus: dict[str, Any] = {
                "kinds": {kind: sum(file.kind == kind for file in files) for kind in documents_mix.KINDS},
                "bytes": sum(file.path.stat().st_size for file in files),
                "extraction_seconds": extraction_seconds,
            }
        else:
            documents = make_documents(args.documents, args.seed, args.doc_bytes)
            texts = embedding_inputs(documents)
            workload = markdown_events(documents)
            corpus = {"kinds": {"md": len(documents)}, "bytes": sum(len(doc.body.encode()) for doc in documents)}
        corpus |= {"documents": args.documents, "chunks": len(texts), "seed": args.seed}
        result = run(name, workload, texts, corpus, args.timeout, args.rounds)
    if result is None:
        return 2
    path = write_json(f"{name}-{args.label}" if args.label else name, result)
    _print_report(result)
    print(f"\nwritten to {path}")
    return 0


def run(
    name: str, workload: Workload, texts: list[str], corpus: dict[str, Any], timeout: float, rounds: int = 1
) -> dict[str, Any] | None:
    """Bare embedder, then `rounds` times the pipeline (a fresh organization each time) and the bare
    embedder again, in one deployment; None without a local model. Each round's ratio is taken against
    the bare runs on either side of it; the figure of merit is the median round's."""
    documents = corpus["documents"]
    print(f"{documents} documents → {len(texts)} chunks; starting PostgreSQL, NATS and services…")
    with deployment(name) as dep:
        models = bare_models()
        if models is None:
            print("the local embedding model is not installed: nothing to compare against", file=sys.stderr)
            return None
        for bare in models:
            bare.model.embed(texts[:WARMUP_TEXTS])  # first-call overheads out of the measurement
        meter = CpuMeter(dep.pids)
        print("bare embedder…", flush=True)
        bares = [measure_bare_all(models, texts, documents, meter)]
        pipelines = []
        for number in range(1, rounds + 1):
            print(f"pipeline (round {number} of {rounds})…", flush=True)
            pipelines.append(asyncio.run(measure_pipeline(dep, workload, timeout, meter, first_round=number == 1)))
            print("bare embedder…", flush=True)
            bares.append(measure_bare_all(models, texts, documents, meter))
    surrounding = zip(pipelines, bares[:-1], bares[1:], strict=True)
    per_round = [_round(pipeline, before, after) for pipeline, before, after in surrounding]
    first = per_round[0]
    return {
        "benchmark": name,
        "environment": environment(),
        "corpus": corpus,
        "embedder": {"model": models[0].model.name},
        "bare_before": bares[0],
        "bare_after": bares[1],
        "bare_docs_per_s": first["bare_docs_per_s"],
        "bare_chunks_per_s": first["bare_chunks_per_s"],
        "bare_padding": bare_padding(texts),
        "pipeline": pipelines[0],
        "indexer_batches": indexer_batches(dep.logs["indexer"]),  # logged by the indexer as it stopped
        "rounds": per_round,
        "ratio": statistics.median(r["ratio"] for r in per_round),
        "cpu_ratio": statistics.median(r["cpu_ratio"] for r in per_round),
        "goal_ratio": GOAL_RATIO,
    }


def _round(pipeline: dict[str, Any], bare_before: dict[str, Any], bare_after: dict[str, Any]) -> dict[str, Any]:
    """One pipeline run against the faster bare way, as the mean of the bare runs on either side of it."""
    before, after = bare_before["best"], bare_after["best"]
    bare_docs = (before["docs_per_s"] + after["docs_per_s"]) / 2
    bare_cpu = (before["cpu"]["bench"] + after["cpu"]["bench"]) / 2
    pipeline_cpu = sum(v for k, v in pipeline["cpu"].items() if k not in ("other", "wall", "cores"))
    return {
        "pipeline_docs_per_s": pipeline["docs_per_s"],
        "bare_docs_per_s": bare_docs,
        "bare_chunks_per_s": (before["chunks_per_s"] + after["chunks_per_s"]) / 2,
        "ratio": pipeline["docs_per_s"] / bare_docs,
        "cpu_ratio": bare_cpu / pipeline_cpu,
        "bare_cpu": bare_cpu,
        "pipeline_cpu": {k: v for k, v in pipeline["cpu"].items() if k not in ("wall", "cores")},
    }


if __name__ == "__main__":
    sys.exit(main())
