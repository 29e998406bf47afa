"""Retrieval quality through the public API, with the reference systems computed in the same run.

`python -m bench.quality [--only cisi|locomo] [--locomo-conversations N]`

CISI: every document is published as one KB event (title = .T, body = .W) into a fresh organization and
indexed by the real indexer; each of the 76 judged queries runs through GET /api/memory?q= in each
retrieval mode (lexical = BM25 leg alone, semantic = dense leg alone, hybrid = the default). The
references — bm25s with English stop words, exact all-MiniLM-L6-v2 cosine, and their RRF (k=60) — are
computed in this process on the same texts. Metrics: nDCG@10 and recall@10, binary relevance.
"""

import argparse
import asyncio
import json
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import httpx
from nats.aio.msg import Msg

from bench.datasets import RecallQuery, Turn, load_cisi, load_locomo
from bench.harness import Deployment, deployment, new_member
from bench.metrics import mean, ndcg_at, recall_at
from bench.references import BM25Reference, DenseReference, fused
from bench.report import environment, table, write_json
from cortex_contracts import subjects
from cortex_contracts.documents import TYPE_DOCUMENT_UPSERTED
from cortex_contracts.envelope import new_envelope
from cortex_embedding.local_model import load_local_embedder
from cortex_messaging.connection import connect, disconnect
from cortex_messaging.publisher import publish_event

K = 10
CISI_NAMESPACE = uuid.UUID("3f2b8c1e-7a9d-4e5f-8b6a-1c2d3e4f5a6b")
MODES = ("lexical", "semantic", "hybrid")
REMEMBER_BATCH = 250
REMEMBER_WAIT_ROUNDS = 20  # x the gateway's 40 s wait


def cisi_id(doc_id: str) -> uuid.UUID:
    return uuid.uuid5(CISI_NAMESPACE, doc_id)


async def publish_and_wait(
    dep: Deployment, org_id: uuid.UUID, events: Sequence[tuple[str, Any]], timeout: float
) -> float:
    """Publish (subject, envelope) pairs and wait until the indexer reported each; returns seconds taken."""
    nc = await connect(dep.nats_url, name="bench-quality")
    pending = {str(event.subject) for _, event in events}
    done = asyncio.Event()

    async def on_indexed(msg: Msg) -> None:
        pending.discard(json.loads(msg.data)["data"]["documentId"])
        if not pending:
            done.set()

    await nc.subscribe(subjects.cortex_document_indexed(org_id), cb=on_indexed)
    started = time.perf_counter()
    js = nc.jetstream()
    for subject, event in events:
        await publish_event(js, subject, event)
    await asyncio.wait_for(done.wait(), timeout)
    elapsed = time.perf_counter() - started
    await disconnect(nc)
    return elapsed


async def run_queries(
    base_url: str,
    headers: dict[str, str],
    queries: dict[str, str],
    params: dict[str, str],
    to_doc: Callable[[str], str],
) -> dict[str, list[str]]:
    limit = asyncio.Semaphore(4)
    async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=60) as client:

        async def one(qid: str, text: str) -> tuple[str, list[str]]:
            async with limit:
                response = await client.get("/api/memory", params={"q": text, "limit": str(K), **params})
            response.raise_for_status()
            return qid, [to_doc(item["id"]) for item in response.json()["items"]]

        return dict(await asyncio.gather(*(one(qid, text) for qid, text in queries.items())))


def score(runs: dict[str, list[str]], relevant: dict[str, set[str]]) -> dict[str, float]:
    return {
        "ndcg@10": round(mean([ndcg_at(runs[q], relevant[q], K) for q in runs]), 4),
        "recall@10": round(mean([recall_at(runs[q], relevant[q], K) for q in runs]), 4),
    }


async def cisi(dep: Deployment, timeout: float = 1800) -> dict[str, Any]:
    data = load_cisi()
    member = await new_member(dep, "cisi")
    events = []
    for doc in data.docs:
        payload = {
            "documentId": str(cisi_id(doc.id)),
            "organizationId": str(member.org_id),
            "title": doc.title,
            "body": doc.body,
            "version": 1,
        }
        event = new_envelope(
            event_type=TYPE_DOCUMENT_UPSERTED,
            source="bench/quality",
            org_id=member.org_id,
            subject=str(cisi_id(doc.id)),
            data=payload,
        )
        events.append((subjects.kb_document_upserted(member.org_id), event))
    ingest_seconds = await publish_and_wait(dep, member.org_id, events, timeout=timeout)
    back = {str(cisi_id(doc.id)): doc.id for doc in data.docs}
    results: dict[str, Any] = {
        "documents": len(data.docs),
        "queries": len(data.queries),
        "ingest_seconds": ingest_seconds,
    }
    for mode in MODES:
        runs = await run_queries(dep.base_url, member.headers, data.queries, {"mode": mode}, back.__getitem__)
        results[f"cortex {mode}"] = score(runs, data.relevant)
        print(f"cortex {mode}: {results[f'cortex {mode}']}", flush=True)

    model = load_local_embedder()
    assert model is not None, "the references need the local embedding model"
    ids, texts = [d.id for d in data.docs], [f"{d.title}\n{d.body}" for d in data.docs]
    bm25, dense = BM25Reference(ids, texts), DenseReference(model, ids, texts)
    references: dict[str, Callable[[str], list[str]]] = {
        "reference BM25 (bm25s)": lambda q: bm25.rank(q, K),
        "reference dense MiniLM": lambda q: dense.rank(q, K),
        "reference RRF": lambda q: fused(bm25, dense, q, K),
    }
    for name, rank in references.items():
        results[name] = score({qid: rank(text) for qid, text in data.queries.items()}, data.relevant)
    return results


def turn_text(turn: Turn) -> str:
    return f"{turn.speaker}: {turn.text}"


async def remember_turns(dep: Deployment, headers: dict[str, str], turns: list[Turn]) -> tuple[dict[str, str], float]:
    """Remember every turn through POST /api/memory/entries, in batches: each batch is posted without waiting
    (the indexer stores entries concurrently), then confirmed by posting it again with ?wait=true, which
    answers at once for a stored entry (deduplicated) and otherwise once it is recallable. Returns entry id →
    dia id, and the seconds taken."""
    limit = asyncio.Semaphore(16)
    started = time.perf_counter()
    async with httpx.AsyncClient(base_url=dep.base_url, headers=headers, timeout=120) as client:

        async def one(turn: Turn, wait: bool) -> tuple[str, str]:
            body = {
                "content": turn_text(turn),
                "partition": "episodic",
                "tier": "session",
                "memorySessionId": turn.conversation,
                "metadata": {"diaId": turn.dia_id, "when": turn.when},
            }
            for _ in range(REMEMBER_WAIT_ROUNDS):
                async with limit:
                    response = await client.post("/api/memory/entries", params={"wait": str(wait).lower()}, json=body)
                if response.status_code != 504:  # accepted, not yet stored within the gateway's wait: ask again
                    break
            response.raise_for_status()
            return response.json()["id"], f"{turn.conversation}/{turn.dia_id}"

        ids: dict[str, str] = {}
        for first in range(0, len(turns), REMEMBER_BATCH):
            batch = turns[first : first + REMEMBER_BATCH]
            await asyncio.gather(*(one(turn, wait=False) for turn in batch))
            ids.update(await asyncio.gather(*(one(turn, wait=True) for turn in batch)))
            print(f"  remembered {len(ids)}/{len(turns)} in {time.perf_counter() - started:.0f} s", flush=True)
    return ids, time.perf_counter() - started


def evidence_recall(runs: dict[int, list[str]], queries: list[RecallQuery]) -> float:
    return round(
        mean(
            [
                len(set(runs[i][:K]) & {f"{q.conversation}/{e}" for e in q.evidence}) / len(q.evidence)
                for i, q in enumerate(queries)
            ]
        ),
        4,
    )


async def locomo(dep: Deployment, conversations: int | None = None) -> dict[str, Any]:
    """Every turn remembered, each evidence question recalled within its conversation; `conversations`
    keeps only the first N conversations (for quicker runs while iterating)."""
    turns, queries = load_locomo()
    if conversations is not None:
        kept = sorted({turn.conversation for turn in turns})[:conversations]
        turns = [turn for turn in turns if turn.conversation in kept]
        queries = [query for query in queries if query.conversation in kept]
    member = await new_member(dep, "locomo")
    ids, seconds = await remember_turns(dep, member.headers, turns)
    results: dict[str, Any] = {"turns": len(turns), "queries": len(queries), "remember_seconds": seconds}
    limit = asyncio.Semaphore(4)
    async with httpx.AsyncClient(base_url=dep.base_url, headers=member.headers, timeout=60) as client:

        async def one(query: RecallQuery) -> list[str]:
            params = {"q": query.question, "sessionId": query.conversation, "limit": str(K)}
            async with limit:
                response = await client.get("/api/memory/recall", params=params)
            response.raise_for_status()
            return [ids[item["id"]] for item in response.json()["items"]]

        cortex_runs = dict(enumerate(await asyncio.gather(*(one(q) for q in queries))))
    results["cortex recall (hybrid + salience)"] = {"recall@10": evidence_recall(cortex_runs, queries)}
    print(f"cortex recall@10: {results['cortex recall (hybrid + salience)']['recall@10']}", flush=True)

    model = load_local_embedder()
    assert model is not None, "the references need the local embedding model"
    by_conversation: dict[str, list[Turn]] = {}
    for turn in turns:
        by_conversation.setdefault(turn.conversation, []).append(turn)
    indexes = {}
    for name, group in by_conversation.items():
        keys, texts = [f"{name}/{t.dia_id}" for t in group], [turn_text(t) for t in group]
        indexes[name] = (BM25Reference(keys, texts), DenseReference(model, keys, texts))
    references: dict[str, Callable[[RecallQuery], list[str]]] = {
        "reference BM25 (bm25s)": lambda q: indexes[q.conversation][0].rank(q.question, K),
        "reference dense MiniLM": lambda q: indexes[q.conversation][1].rank(q.question, K),
        "reference RRF": lambda q: fused(*indexes[q.conversation], q.question, K),
    }
    for name, rank in references.items():
        results[name] = {"recall@10": evidence_recall({i: rank(q) for i, q in enumerate(queries)}, queries)}
    return results


def print_table(title: str, results: dict[str, Any]) -> None:
    metrics = next(list(v) for v in results.values() if isinstance(v, dict))
    rows = [(name, *(v[m] for m in metrics)) for name, v in results.items() if isinstance(v, dict)]
    print(f"\n{title}")
    print(table(["system", *metrics], rows))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["cisi", "locomo"], help="run one of the two collections")
    parser.add_argument(
        "--locomo-conversations", type=int, metavar="N", help="LoCoMo: only the first N conversations (of 5)"
    )
    parser.add_argument(
        "--ingest-timeout", type=float, default=1800, help="seconds CISI's indexing may take (default 1800)"
    )
    args = parser.parse_args(argv)
    report: dict[str, Any] = {"environment": environment()}
    with deployment("quality") as dep:
        if args.only in (None, "cisi"):
            report["cisi"] = asyncio.run(cisi(dep, args.ingest_timeout))
            print_table("CISI (76 judged queries)", report["cisi"])
        if args.only in (None, "locomo"):
            report["locomo"] = asyncio.run(locomo(dep, args.locomo_conversations))
            print_table("LoCoMo dev (evidence recall, scoped to the conversation)", report["locomo"])
    # A run of one collection does not overwrite the full report.
    name = "quality" if args.only is None else f"quality-{args.only}"
    print(f"\nwritten to {write_json(name, report)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
