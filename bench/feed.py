"""Feed and facets latency through the gateway as an organization grows: 2-filter GET /api/memory and
GET /api/memory/facets at 10k and 100k documents.

`python -m bench.feed [--sizes 10000,100000] [--requests 300] [--concurrency 4]`

The aggregator and gateway run as their own processes (bench/harness.py), the aggregator without a
query embedder (no request here has `q`). One organization is written straight into PostgreSQL, as
the owner, with COPY (bench/dataset.py): its catalog — 20 Missions, 200 Works each in a Mission, 10
Teams owning the Works through team_resources (every Work one Team, one Work in ten a second) — then
its documents, grown step by step to each size, with a small organization beside it; VACUUM ANALYZE
after every load. Documents get no chunks: neither the feed without `q` nor the facets read them; their
kb_document_tags rows are written as the indexer would (TAG_ROWS).

Documents (seeded): a class from the 12 known ones and 1-3 of 50 tags, both Zipf-skewed (a few
common, most rare, as real tags are), a Work (Zipf-skewed too), status published/draft/archived
80/15/5 %, source kb/upload/agent/note 70/15/10/5 %, updated_at uniform over the last year, a short
body (20-60 words).

At each size, per kind, a warm-up, then `--requests` requests from `--concurrency` clients at once:
  feed        GET /api/memory?type=X&tag=Y&limit=20
  facets      GET /api/memory/facets?type=X&tag=Y
  facets-all  GET /api/memory/facets            (no filter: context, not a goal; `--context-requests`)
(X, Y) cycle through a fixed pool of (class, tag) pairs — half drawn the way documents are (popular
combinations), half uniformly over all 600 (mostly rare ones) — so each pair is asked several times
and the slowest can be named. Reported: p50/p95/p99/mean, one client alone, growth between sizes,
the goal (p50 ≤ 60 ms and p99 ≤ 200 ms for feed and facets), and CPU by process (the machine may be
shared: `other` is everyone else's).

At the largest size, each 2-filter kind is probed with its slowest pair and with a typical one:
every statement the request runs is captured from PostgreSQL's log and EXPLAIN (ANALYZE, BUFFERS)ed
as the service's role with the organization bound, custom and generic plan (bench/explain.py) — the
SQL is what the aggregator built and ran, nothing is copied. Key plan lines are printed for the
slowest kind; all plans go to bench/results/feed-explain.txt.

With `--shapes` (the default), the database time of one request is measured for every pair, the
aggregator's own statements (since the facet index: one refresh statement, plus the page's rows for
the feed) against the SQL they replaced, whose answers are checked equal to the index's
(bench/feed_shapes.py). With
`--experiments` (the default), the changes in EXPERIMENTS are then made by hand on the bench
database, one at a time, with the services running: the 2-filter kinds measured again through the
gateway and re-explained, the change undone — before/after in the report. No product code changes.

After every load: VACUUM ANALYZE (statistics, and the visibility map autovacuum would soon set).
"""

import argparse
import asyncio
import itertools
import os
import re
import statistics
import sys
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import numpy as np
from numpy.typing import NDArray

from bench import dataset, feed_shapes
from bench.corpus import TextGenerator
from bench.cpu import CpuMeter, describe, usage
from bench.dataset import DocumentFields, Passage
from bench.explain import Explained, explain_search
from bench.explain import label as search_label
from bench.harness import RESULTS_DIR, Deployment, Member, deployment, new_member
from bench.http_client import HttpError, KeepAliveClient
from bench.report import environment, latency_summary, table, write_json
from cortex_contracts.doc_classes import DOC_CLASSES
from cortex_store.database import asyncpg_dsn
from cortex_store.tenancy import APP_ROLE

MISSIONS = 20
WORKS = 200
TEAMS = 10
TAGS = tuple(f"tag-{i:02d}" for i in range(50))
CLASSES = tuple(DOC_CLASSES)
STATUSES = (("published", 0.80), ("draft", 0.15), ("archived", 0.05))
SOURCES = (("kb", 0.70), ("upload", 0.15), ("agent", 0.10), ("note", 0.05))
CLASS_SKEW = 0.7  # Zipf exponents
TAG_SKEW = 1.0
WORK_SKEW = 0.8
SECOND_TEAM_EVERY = 10  # one Work in ten is owned by a second Team
BODY_POOL = 3000  # distinct bodies (titles are all fresh)
SMALL_ORG_DOCUMENTS = 1000
SMALL_ORG_WORKS = 10
PAIR_POOL = 60
GOAL_P50_MS = 60.0
GOAL_P99_MS = 200.0
EXPLAIN_FILE = RESULTS_DIR / "feed-explain.txt"
PLAN_KEY_LINES = 16
QUIESCE_SECONDS = 300.0
UUID_LITERAL = re.compile(r"'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'::uuid")


@dataclass(frozen=True)
class Kind:
    name: str
    path: str
    filtered: bool
    goal: bool


FEED = Kind("feed", "/api/memory", filtered=True, goal=True)
FACETS = Kind("facets", "/api/memory/facets", filtered=True, goal=True)
FACETS_ALL = Kind("facets-all", "/api/memory/facets", filtered=False, goal=False)
FEED_ALL = Kind("feed-all", "/api/memory", filtered=False, goal=False)  # sanity checks only
KINDS = (FEED, FACETS, FACETS_ALL)

Pair = tuple[str, str]  # (doc class, tag)


@dataclass(frozen=True)
class Experiment:
    name: str
    create: tuple[str, ...]  # run as the owner
    drop: tuple[str, ...]
    why: str


# Changes tried by hand on the bench database through the running services, each undone afterwards; never
# product code. Around each step the services' database sessions are renewed (renew_sessions): a plan
# cached before a change would survive it, and role settings reach new sessions only. None is pending:
# the last ones were adopted — custom plans (the aggregator's connections set plan_cache_mode) and an
# index-usable tag filter (kb_document_tags, migration 0007); bench/feed_shapes.py keeps the before/after.
EXPERIMENTS: tuple[Experiment, ...] = ()


# ---------------------------------------------------------------------------------------------- data


@dataclass(frozen=True)
class Catalog:
    missions: list[uuid.UUID]
    works: list[uuid.UUID]
    teams: list[uuid.UUID]
    work_mission: dict[uuid.UUID, uuid.UUID]
    work_teams: dict[uuid.UUID, list[uuid.UUID]]


def _zipf(n: int, exponent: float) -> NDArray[np.float64]:
    weights: NDArray[np.float64] = 1.0 / np.arange(1, n + 1, dtype=np.float64) ** exponent
    normalized: NDArray[np.float64] = weights / weights.sum()
    return normalized


def make_catalog(rng: np.random.Generator, missions: int, works: int, teams: int) -> Catalog:
    mission_ids = [uuid.uuid4() for _ in range(missions)]
    work_ids = [uuid.uuid4() for _ in range(works)]
    team_ids = [uuid.uuid4() for _ in range(teams)]
    work_mission = {work: mission_ids[int(rng.integers(missions))] for work in work_ids}
    work_teams: dict[uuid.UUID, list[uuid.UUID]] = {}
    for index, work in enumerate(work_ids):
        count = 2 if teams > 1 and index % SECOND_TEAM_EVERY == 0 else 1
        work_teams[work] = [team_ids[int(i)] for i in rng.choice(teams, size=count, replace=False)]
    return Catalog(mission_ids, work_ids, team_ids, work_mission, work_teams)


async def insert_catalog(connection: Any, org_id: uuid.UUID, catalog: Catalog, prefix: str) -> None:
    missions = [(m, org_id, f"{prefix} mission {i + 1}") for i, m in enumerate(catalog.missions)]
    works = [(w, org_id, f"{prefix} work {i + 1}", catalog.work_mission[w]) for i, w in enumerate(catalog.works)]
    teams = [(t, org_id, f"{prefix} team {i + 1}") for i, t in enumerate(catalog.teams)]
    owners = [(t, org_id, "work", w) for w, ts in catalog.work_teams.items() for t in ts]
    async with connection.transaction():
        await connection.copy_records_to_table("missions", records=missions, columns=("id", "organization_id", "title"))
        await connection.copy_records_to_table(
            "works", records=works, columns=("id", "organization_id", "title", "mission_id")
        )
        await connection.copy_records_to_table("teams", records=teams, columns=("id", "organization_id", "name"))
        await connection.copy_records_to_table(
            "team_resources", records=owners, columns=("team_id", "organization_id", "resource_type", "resource_id")
        )


def make_fields(rng: np.random.Generator, catalog: Catalog, count: int) -> list[DocumentFields]:
    class_p, tag_p, work_p = (
        _zipf(len(CLASSES), CLASS_SKEW),
        _zipf(len(TAGS), TAG_SKEW),
        _zipf(len(catalog.works), WORK_SKEW),
    )
    classes = rng.choice(len(CLASSES), size=count, p=class_p)
    works = rng.choice(len(catalog.works), size=count, p=work_p)
    tag_counts = rng.integers(1, 4, size=count)
    statuses = rng.choice(len(STATUSES), size=count, p=[p for _, p in STATUSES])
    sources = rng.choice(len(SOURCES), size=count, p=[p for _, p in SOURCES])
    fields = []
    for i in range(count):
        tags = rng.choice(len(TAGS), size=int(tag_counts[i]), replace=False, p=tag_p)
        fields.append(
            DocumentFields(
                status=STATUSES[int(statuses[i])][0],
                source=SOURCES[int(sources[i])][0],
                tags=tuple(TAGS[int(t)] for t in tags),
                work_id=catalog.works[int(works[i])],
                doc_class=CLASSES[int(classes[i])],
            )
        )
    return fields


def make_passages(generator: TextGenerator, count: int) -> list[Passage]:
    """Short documents: a fresh title each, the body from a pool (their text matters to no query here)."""
    bodies = [generator.passage(20, 60) for _ in range(min(count, BODY_POOL))]
    passages = []
    for index in range(count):
        topic, _, body = bodies[index % len(bodies)]
        title = generator.title(generator.topic())
        passages.append(Passage(topic=topic, title=title, heading=title, text=body, content_hash=""))
    return passages


def make_pairs(rng: np.random.Generator, fields: Sequence[DocumentFields], count: int) -> list[Pair]:
    """Half popular (a random document's class and one of its tags), half uniform over class × tag."""
    pairs: dict[Pair, None] = {}
    while len(pairs) < count // 2:
        doc = fields[int(rng.integers(len(fields)))]
        pairs[doc.doc_class or "", doc.tags[int(rng.integers(len(doc.tags)))]] = None
    while len(pairs) < count:
        pairs[CLASSES[int(rng.integers(len(CLASSES)))], TAGS[int(rng.integers(len(TAGS)))]] = None
    return list(pairs)


def pair_counts(fields: Sequence[DocumentFields]) -> Counter[Pair]:
    return Counter((f.doc_class or "", tag) for f in fields for tag in f.tags)


@dataclass(frozen=True)
class Org:
    member: Member
    catalog: Catalog
    fields: list[DocumentFields]
    passages: list[Passage]


async def analyze(connection: Any) -> None:
    """VACUUM ANALYZE: fresh statistics, and the visibility map autovacuum would soon set after a bulk load
    (without it no index-only scan is possible, a transient state a settled table is not in)."""
    for name in ("kb_documents", "kb_document_tags", "works", "missions", "teams", "team_resources"):
        await connection.execute(f"VACUUM (ANALYZE) {name}")


# ------------------------------------------------------------------------------------------ requests


def params_for(kind: Kind, pair: Pair, limit: int) -> dict[str, str | int]:
    params: dict[str, str | int] = {"type": pair[0], "tag": pair[1]} if kind.filtered else {}
    if kind.path == FEED.path:
        params["limit"] = limit
    return params


@dataclass
class Run:
    latencies: list[float] = field(default_factory=list)
    by_pair: dict[int, list[float]] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


async def fire(
    base_url: str,
    headers: dict[str, str],
    kind: Kind,
    pairs: Sequence[Pair],
    total: int,
    concurrency: int,
    limit: int,
    offset: int = 0,
) -> Run:
    """`total` requests from `concurrency` clients, each sending its next request when the last returns."""
    counter = itertools.count()
    run = Run()

    async def client() -> None:
        async with KeepAliveClient(base_url, headers) as http:
            while (index := next(counter)) < total:
                key = (index + offset) % len(pairs)
                started = time.perf_counter()
                try:
                    status, _ = await http.get(kind.path, params_for(kind, pairs[key], limit))
                except HttpError as exc:
                    run.errors[type(exc).__name__] = run.errors.get(type(exc).__name__, 0) + 1
                    continue
                elapsed = time.perf_counter() - started
                if status != 200:
                    run.errors[str(status)] = run.errors.get(str(status), 0) + 1
                    continue
                run.latencies.append(elapsed)
                run.by_pair.setdefault(key, []).append(elapsed)

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(concurrency)))
    run.seconds = time.perf_counter() - started
    return run


async def get_json(base_url: str, member: Member, kind: Kind, pair: Pair, limit: int) -> Any:
    async with httpx.AsyncClient(base_url=base_url, headers=member.headers, timeout=120) as http:
        response = await http.get(kind.path, params=params_for(kind, pair, limit))
        response.raise_for_status()
        return response.json()


def _count_of(values: list[dict[str, Any]], value: str) -> int:
    return next((v["count"] for v in values if v["value"] == value), 0)


async def sanity(
    dep: Deployment, connection: Any, big: Org, small: Org, size: int, pair: Pair, matches: int
) -> dict[str, Any]:
    """Counts agree with what was loaded; filters hold; neither organization sees the other's items."""
    total: int | str
    try:
        everything = await get_json(dep.base_url, big.member, FACETS_ALL, pair, 20)
    except httpx.HTTPStatusError as exc:  # the unfiltered facets may outlast the gateway's RPC timeout
        if exc.response.status_code != 504:
            raise
        total = "not checked: the unfiltered facets timed out (504)"
    else:
        total = sum(v["count"] for v in everything["type"])
        assert total == size, f"type facet counts sum to {total}, {size} documents loaded"
        assert everything.get("mission") and everything.get("team"), "the Mission and Team facets are missing"
    page = await get_json(dep.base_url, big.member, FEED, pair, 20)
    assert len(page["items"]) == min(20, matches), f"feed {pair}: {len(page['items'])} items, {matches} match"
    assert all(item["docClass"] == pair[0] for item in page["items"]), f"feed {pair}: an item of another class"
    counted = await get_json(dep.base_url, big.member, FACETS, pair, 20)
    assert _count_of(counted["type"], pair[0]) == matches, f"facets {pair}: type count is not {matches}"
    assert _count_of(counted["tag"], pair[1]) == matches, f"facets {pair}: tag count is not {matches}"
    small_ids = {
        str(r["id"])
        for r in await connection.fetch("SELECT id FROM kb_documents WHERE organization_id = $1", small.member.org_id)
    }
    big_page = await get_json(dep.base_url, big.member, FEED, pair, 100)
    small_page = await get_json(dep.base_url, small.member, FACETS_ALL, pair, 20)
    small_feed = await get_json(dep.base_url, small.member, FEED_ALL, pair, 100)
    assert not {i["id"] for i in big_page["items"]} & small_ids, "the big org's feed shows the small org's items"
    assert {i["id"] for i in small_feed["items"]} <= small_ids, "the small org's feed shows another org's items"
    assert sum(v["count"] for v in small_page["type"]) == len(small.fields), "the small org's counts are off"
    return {"pair": list(pair), "matches": matches, "feed_items": len(page["items"]), "type_facet_total": total}


def _pair_medians(run: Run, pairs: Sequence[Pair], counts: Counter[Pair]) -> list[dict[str, Any]]:
    rows = [
        {
            "type": pairs[key][0],
            "tag": pairs[key][1],
            "matches": counts[pairs[key]],
            "n": len(seconds),
            "median_ms": statistics.median(seconds) * 1000,
        }
        for key, seconds in run.by_pair.items()
    ]
    return sorted(rows, key=lambda r: r["median_ms"], reverse=True)


async def quiesce(connection: Any, timeout: float = QUIESCE_SECONDS) -> float:
    """Wait until no other backend runs a statement: requests the gateway gave up on (504) still run in the
    aggregator and the database, and would otherwise weigh on the next measurement. Returns the seconds waited."""
    started = time.perf_counter()
    while time.perf_counter() - started < timeout:
        busy = await connection.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid()"
            " AND backend_type = 'client backend' AND datname = current_database()"
        )
        if not busy:
            break
        await asyncio.sleep(0.5)
    return time.perf_counter() - started


SERVICE_PROCESSES = ("gateway", "aggregator", "nats", "postgres")


def cpu_per_request(spent: dict[str, float], requests: int) -> dict[str, float]:
    """CPU milliseconds per request by process, and for all of the deployment together (`services`)."""
    per = {name: 1000 * spent.get(name, 0.0) / requests for name in SERVICE_PROCESSES}
    per["services"] = sum(per.values())
    return per


async def measure_kind(
    dep: Deployment,
    connection: Any,
    member: Member,
    kind: Kind,
    pairs: Sequence[Pair],
    counts: Counter[Pair],
    args: argparse.Namespace,
    meter: CpuMeter,
) -> dict[str, Any]:
    total = args.requests if kind.goal else args.context_requests
    warmups = args.warmup if kind.goal else max(4, args.warmup // 5)
    await quiesce(connection)
    warmup = await fire(dep.base_url, member.headers, kind, pairs, warmups, args.concurrency, args.limit, 7)
    if warmup.errors:
        print(f"        {kind.name}: warm-up errors {warmup.errors}", flush=True)
    drained = await quiesce(connection)
    before = meter.snapshot()
    run = await fire(dep.base_url, member.headers, kind, pairs, total, args.concurrency, args.limit)
    spent = usage(before, meter.snapshot())
    drained += await quiesce(connection)
    single = min(args.single_requests, total)
    alone = await fire(dep.base_url, member.headers, kind, pairs, single, 1, args.limit, 3)
    drained += await quiesce(connection)
    result: dict[str, Any] = {
        "kind": kind.name,
        "latency_ms": latency_summary(run.latencies) if run.latencies else None,
        "requests": total,
        "errors": run.errors,
        "warmup_errors": warmup.errors,
        "throughput_rps": len(run.latencies) / run.seconds,
        "single_client_latency_ms": latency_summary(alone.latencies) if alone.latencies else None,
        "single_client_errors": alone.errors,
        "cpu_seconds": spent,
        "cpu_ms_per_request": cpu_per_request(spent, total),
        "seconds_waiting_for_abandoned_work": drained,
    }
    if kind.filtered:
        result["pairs"] = _pair_medians(run, pairs, counts)
    return result


def _print_kind(result: dict[str, Any]) -> None:
    latency = result["latency_ms"]
    if latency is None:
        print(f"        {result['kind']:<10} no successful request: {result['errors']}", flush=True)
        return
    per = result["cpu_ms_per_request"]
    print(
        f"        {result['kind']:<10} p50 {latency['p50']:.1f} ms  p99 {latency['p99']:.1f} ms  "
        f"({result['throughput_rps']:.1f} req/s, errors {result['errors'] or 'none'}); "
        f"cpu/request {per['services']:.1f} ms (postgres {per['postgres']:.1f}); {describe(result['cpu_seconds'])}",
        flush=True,
    )


# ------------------------------------------------------------------------------------------- explain


def statement_label(sql: str) -> str:
    """The aggregator's statements named after what built them; everything else as bench.explain does."""
    flat = " ".join(sql.split())
    if "pg_current_snapshot" in flat:
        return "facet index: refresh" if "changed_xid" in flat else "facet index: load"
    if flat.startswith("SELECT 'work' AS kind"):
        return "facet index: catalog"
    if flat.startswith("SET LOCAL cortex.organization_id"):
        return "bind organization (SET LOCAL)"
    if "api_key_id" in flat and "organization_id" in flat:
        return "auth: caller"
    return search_label(sql)


def _plan_summary(explained: Sequence[Explained]) -> list[dict[str, Any]]:
    return [
        {
            "statement": statement_label(e.sql),
            "in_situ": e.in_situ_ms,
            "custom": e.custom_ms,
            "generic": e.generic_ms,
        }
        for e in explained
    ]


KEY_DETAILS = (
    "Sort Method",
    "Rows Removed by Filter",
    "Rows Removed by Index Recheck",
    "Heap Blocks",
    "Index Cond",
    "Recheck Cond",
    "Filter",
    "Hash Cond",
    "Join Filter",
    "Workers Launched",
)


def plan_key_lines(plan: str, limit: int = PLAN_KEY_LINES) -> list[str]:
    """Plan nodes (without the cost estimate) and the details that explain their time; first `limit`."""
    lines = []
    for raw in plan.splitlines():
        text = UUID_LITERAL.sub("<org>", raw.rstrip())
        stripped = text.strip()
        if "actual time=" in text:
            head, _, rest = text.partition("  (cost=")
            actual = rest[rest.find("(actual") :] if "(actual" in rest else ""
            lines.append(f"{head} {actual}".rstrip())
        elif stripped.startswith(KEY_DETAILS):
            lines.append(text if len(text) <= 160 else text[:157] + "…")
    return lines[:limit]


@dataclass(frozen=True)
class Probe:
    kind: str
    role: str  # "slowest pair" / "typical pair"
    pair: Pair
    matches: int
    explained: list[Explained]
    label: str = ""  # e.g. an experiment's name

    def summary(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "probe": self.role,
            "pair": list(self.pair),
            "matches": self.matches,
            "label": self.label,
            "statements": _plan_summary(self.explained),
        }


async def probe(
    dep: Deployment, connection: Any, member: Member, kind: Kind, role: str, pair: Pair, matches: int, args: Any
) -> Probe:
    assert dep.postgres_log is not None

    async def request() -> Any:
        return await get_json(dep.base_url, member, kind, pair, args.limit)

    await quiesce(connection)  # only this request's statements in the log
    explained = await explain_search(connection, dep.postgres_log, request)
    return Probe(kind.name, role, pair, matches, explained)


def choose_probes(result: dict[str, Any]) -> list[tuple[str, Pair, int]]:
    rows = result["pairs"]
    slowest = rows[0]
    typical = rows[len(rows) // 2]
    return [
        ("slowest pair", (slowest["type"], slowest["tag"]), slowest["matches"]),
        ("typical pair", (typical["type"], typical["tag"]), typical["matches"]),
    ]


def _write_plans(probes: Sequence[Probe], size: int) -> None:
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    with EXPLAIN_FILE.open("w") as out:
        for p in probes:
            for e in p.explained:
                out.write(
                    f"===== {size:,} documents, {p.kind} {p.label or ''} ({p.role} type={p.pair[0]} tag={p.pair[1]}, "
                    f"{p.matches} match): {statement_label(e.sql)} — in situ {e.in_situ_ms:.2f} ms\n{e.sql.strip()}\n\n"
                )
                out.write(f"----- custom plan ({e.custom_ms} ms)\n{e.custom_plan}\n\n")
                out.write(f"----- generic plan ({e.generic_ms} ms)\n{e.generic_plan}\n\n")


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def print_probe(p: Probe, *, plans: bool) -> None:
    total = sum(e.in_situ_ms for e in p.explained)
    print(
        f"\n{p.kind}{' [' + p.label + ']' if p.label else ''}, {p.role} type={p.pair[0]} tag={p.pair[1]} "
        f"({p.matches} matching documents): {len(p.explained)} statements, {total:.1f} ms in the database as run"
    )
    rows = [[statement_label(e.sql), _ms(e.in_situ_ms), _ms(e.custom_ms), _ms(e.generic_ms)] for e in p.explained]
    print(table(["statement", "as run ms", "custom ms", "generic ms"], rows))
    if not plans:
        return
    for e in sorted(p.explained, key=lambda e: e.custom_ms or 0.0, reverse=True)[:4]:
        if (e.custom_ms or 0.0) < 1.0:
            continue
        print(f"  -- {statement_label(e.sql)}: custom plan, {_ms(e.custom_ms)} ms")
        for line in plan_key_lines(e.custom_plan):
            print(f"     {line}")


# ---------------------------------------------------------------------------------------------- runs


# The indexer writes a document's tags as kb_document_tags rows with the document (the tag filter reads
# them); documents COPYed straight into kb_documents get theirs here.
TAG_ROWS = """
INSERT INTO kb_document_tags (organization_id, tag, document_id)
SELECT d.organization_id, t.tag, d.id FROM kb_documents d, unnest(d.tags) AS t(tag)
WHERE d.organization_id = $1
ON CONFLICT DO NOTHING
"""


async def load_org(connection: Any, org: Org, start: int, end: int, now: Any) -> None:
    await dataset.insert_passages(
        connection, org.member.org_id, org.passages[start:end], None, now=now, seed=start, fields=org.fields[start:end]
    )
    await connection.execute(TAG_ROWS, org.member.org_id)


async def run_sizes(dep: Deployment, sizes: Sequence[int], args: argparse.Namespace) -> dict[str, Any]:
    rng = np.random.default_rng(args.seed)
    generator = TextGenerator(args.seed)
    big_catalog = make_catalog(rng, MISSIONS, WORKS, TEAMS)
    small_catalog = make_catalog(rng, 2, SMALL_ORG_WORKS, 2)
    print(f"generating {sizes[-1]:,} + {SMALL_ORG_DOCUMENTS:,} documents…", flush=True)
    big = Org(
        await new_member(dep, "bench-feed"),
        big_catalog,
        make_fields(rng, big_catalog, sizes[-1]),
        make_passages(generator, sizes[-1]),
    )
    small = Org(
        await new_member(dep, "bench-feed-small"),
        small_catalog,
        make_fields(rng, small_catalog, SMALL_ORG_DOCUMENTS),
        make_passages(generator, SMALL_ORG_DOCUMENTS),
    )
    pairs = make_pairs(rng, big.fields[: sizes[0]], PAIR_POOL)
    meter = CpuMeter(dep.pids)
    connection = await dataset.connect(asyncpg_dsn(dep.database_url))
    results: list[dict[str, Any]] = []
    probes: list[Probe] = []
    experiments: list[dict[str, Any]] = []
    shapes: dict[str, Any] = {}
    now = dataset.utc_now()
    try:
        versions = await dataset.server_versions(connection)
        await insert_catalog(connection, big.member.org_id, big.catalog, "Big")
        await insert_catalog(connection, small.member.org_id, small.catalog, "Small")
        await load_org(connection, small, 0, SMALL_ORG_DOCUMENTS, now)
        loaded = 0
        for size in sizes:
            started = time.perf_counter()
            await load_org(connection, big, loaded, size, now)
            loaded = size
            await analyze(connection)
            load_seconds = time.perf_counter() - started
            counts = pair_counts(big.fields[:size])
            print(f"{size:>8,} documents loaded (+ANALYZE in {load_seconds:.1f} s); measuring…", flush=True)
            check = await sanity(dep, connection, big, small, size, pairs[0], counts[pairs[0]])
            print(f"         sanity ✓ ({check})", flush=True)
            measured = {}
            for kind in KINDS:
                measured[kind.name] = await measure_kind(dep, connection, big.member, kind, pairs, counts, args, meter)
                _print_kind(measured[kind.name])
            results.append({"size": size, "load_seconds": load_seconds, "sanity": check, "kinds": measured})
        counts = pair_counts(big.fields[: sizes[-1]])
        if args.explain and dep.postgres_log is not None:
            last = results[-1]["kinds"]
            for kind in (FEED, FACETS):
                for role, pair, matches in choose_probes(last[kind.name]):
                    probes.append(await probe(dep, connection, big.member, kind, role, pair, matches, args))
        if args.shapes:
            print(f"comparing statement shapes over {len(pairs)} pairs (as cortex_app, custom plans)…", flush=True)
            await quiesce(connection)
            shapes = await feed_shapes.compare(
                asyncpg_dsn(dep.database_url), big.member.org_id, pairs, counts, args.limit, args.shape_reps
            )
        if args.experiments:
            experiments = await run_experiments(dep, connection, big.member, pairs, counts, args, meter, probes)
        _write_plans([*probes, *(p for e in experiments for p in e["_probes"])], sizes[-1])
    finally:
        await connection.close()
    return {
        "sizes": results,
        "pairs": [{"type": t, "tag": g} for t, g in pairs],
        "probes": [p.summary() for p in probes],
        "experiments": experiments,
        "shapes": shapes,
        "servers": versions,
        "big_org": big.member.slug,
        "small_org": small.member.slug,
        "_probes": probes,
    }


async def renew_sessions(connection: Any) -> int:
    """End the services' database sessions (the bench's own server): their pools reconnect on the next
    checkout (pool_pre_ping), so new sessions see role settings and no plan cached before a change."""
    await quiesce(connection)
    ended: int = await connection.fetchval(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE usename = $1 AND pid <> pg_backend_pid()",
        APP_ROLE,
    )
    return ended


async def run_experiments(
    dep: Deployment,
    connection: Any,
    member: Member,
    pairs: Sequence[Pair],
    counts: Counter[Pair],
    args: argparse.Namespace,
    meter: CpuMeter,
    baseline: Sequence[Probe],
) -> list[dict[str, Any]]:
    """Each change alone: the 2-filter kinds measured just before it (the machine's load drifts), the change
    made, measured again and re-explained, the change undone; fresh service sessions at every step."""
    results = []
    for experiment in EXPERIMENTS:
        print(f"\nexperiment {experiment.name}: {experiment.why}", flush=True)
        await renew_sessions(connection)
        before = {}
        for kind in (FEED, FACETS):
            before[kind.name] = await measure_kind(dep, connection, member, kind, pairs, counts, args, meter)
            _print_kind(before[kind.name])
        try:
            for statement in experiment.create:
                print(f"  {statement}", flush=True)
                await connection.execute(statement)
            await renew_sessions(connection)
            measured = {}
            for kind in (FEED, FACETS):
                measured[kind.name] = await measure_kind(dep, connection, member, kind, pairs, counts, args, meter)
                _print_kind(measured[kind.name])
            after = []
            for base in baseline if dep.postgres_log is not None else ():
                kind = FEED if base.kind == FEED.name else FACETS
                again = await probe(dep, connection, member, kind, base.role, base.pair, base.matches, args)
                after.append(Probe(again.kind, again.role, again.pair, again.matches, again.explained, experiment.name))
        finally:
            for statement in experiment.drop:
                await connection.execute(statement)
            await renew_sessions(connection)
        results.append(
            {
                "name": experiment.name,
                "why": experiment.why,
                "create": list(experiment.create),
                "before": before,
                "kinds": measured,
                "probes": [p.summary() for p in after],
                "_probes": after,
            }
        )
    return results


# -------------------------------------------------------------------------------------------- report


def _growth(sizes: Sequence[dict[str, Any]], kind: str, metric: str) -> list[str]:
    factors = []
    for smaller, larger in itertools.pairwise(sizes):
        a, b = smaller["kinds"][kind]["latency_ms"], larger["kinds"][kind]["latency_ms"]
        if a and b:
            factors.append(f"×{b[metric] / a[metric]:.2f}")
    return factors


def goal_verdict(latency: dict[str, float] | None, errors: int = 0) -> str:
    if latency is None:
        return "FAIL (no result)"
    misses = [f"{errors} errors"] if errors else []
    if latency["p50"] > GOAL_P50_MS:
        misses.append(f"p50 {latency['p50']:.0f} > {GOAL_P50_MS:.0f}")
    if latency["p99"] > GOAL_P99_MS:
        misses.append(f"p99 {latency['p99']:.0f} > {GOAL_P99_MS:.0f}")
    return "pass" if not misses else "FAIL: " + ", ".join(misses)


def _rows(sizes: Sequence[dict[str, Any]]) -> list[list[object]]:
    rows: list[list[object]] = []
    for r in sizes:
        for name, k in r["kinds"].items():
            lat = k["latency_ms"] or {}
            alone = k["single_client_latency_ms"] or {}
            goal = goal_verdict(k["latency_ms"], sum(k["errors"].values())) if name != FACETS_ALL.name else "(context)"
            rows.append(
                [
                    f"{r['size']:,}",
                    name,
                    lat.get("p50", float("nan")),
                    lat.get("p95", float("nan")),
                    lat.get("p99", float("nan")),
                    lat.get("mean", float("nan")),
                    k["throughput_rps"],
                    sum(k["errors"].values()),
                    alone.get("p50", float("nan")),
                    k["cpu_ms_per_request"]["services"],
                    k["cpu_ms_per_request"]["postgres"],
                    goal,
                ]
            )
    return rows


HEADERS = [
    "documents",
    "kind",
    "p50 ms",
    "p95 ms",
    "p99 ms",
    "mean ms",
    "req/s",
    "errors",
    "1-client p50",
    "cpu ms/req",
    "pg cpu ms/req",
    "goal",
]


def print_report(report: dict[str, Any], probes: Sequence[Probe], experiments: Sequence[dict[str, Any]]) -> None:
    params = report["parameters"]
    sizes = report["sizes"]
    print()
    print(
        f"Feed and facets: type=X&tag=Y over {params['pair_pool']} (class, tag) pairs, "
        f"{params['concurrency']} concurrent clients, {params['requests']} requests per kind and size "
        f"({params['context_requests']} for facets-all) after {params['warmup']} warm-up; "
        f"goal p50 ≤ {GOAL_P50_MS:.0f} ms, p99 ≤ {GOAL_P99_MS:.0f} ms"
    )
    print(table(HEADERS, _rows(sizes)))
    if len(sizes) > 1:
        span = f"{sizes[0]['size']:,}→{sizes[-1]['size']:,}"
        for kind in KINDS:
            p50, p99 = _growth(sizes, kind.name, "p50"), _growth(sizes, kind.name, "p99")
            print(f"growth {span} {kind.name:<10} p50 {' '.join(p50)}  p99 {' '.join(p99)}")
    last = sizes[-1]
    print(f"\nslowest pairs at {last['size']:,} documents (median of the requests for that pair):")
    for kind in (FEED, FACETS):
        slow = last["kinds"][kind.name]["pairs"][:3]
        text = "; ".join(f"{p['type']}+{p['tag']} ({p['matches']} docs) {p['median_ms']:.0f} ms" for p in slow)
        print(f"  {kind.name:<7} {text}")
    if probes:
        goal_kinds = [k for k in (FEED, FACETS) if last["kinds"][k.name]["latency_ms"]]
        slowest = max(goal_kinds, key=lambda k: last["kinds"][k.name]["latency_ms"]["p50"])
        print(
            f"\nPlans at {last['size']:,} documents — slowest kind: {slowest.name}. Every statement of one request, "
            "as the service ran it (bind + execute, from the server log) and under EXPLAIN ANALYZE as cortex_app "
            "with the org bound (custom / generic plan):"
        )
        for p in probes:
            print_probe(p, plans=p.kind == slowest.name)
        print(f"\nfull plans: {EXPLAIN_FILE}")
    if report.get("shapes"):
        print_shapes(report["shapes"], last["size"])
    for experiment in experiments:
        print(f"\nexperiment {experiment['name']} ({'; '.join(experiment['create'])})")
        rows = []
        for name, k in experiment["kinds"].items():
            b = experiment["before"][name]
            rows.extend(
                [
                    [name, "before", *_experiment_cells(b)],
                    [name, "after", *_experiment_cells(k)],
                ]
            )
        print(
            table(
                ["kind", "", "p50 ms", "p99 ms", "1-client p50", "cpu ms/req", "pg cpu ms/req", "others' cpu", "goal"],
                rows,
            )
        )
        for p in experiment["_probes"]:
            print_probe(p, plans=False)


def _experiment_cells(k: dict[str, Any]) -> list[object]:
    lat, alone, cpu = k["latency_ms"] or {}, k["single_client_latency_ms"] or {}, k["cpu_seconds"]
    others = cpu["other"] / (cpu["wall"] * cpu["cores"])
    return [
        lat.get("p50", float("nan")),
        lat.get("p99", float("nan")),
        alone.get("p50", float("nan")),
        k["cpu_ms_per_request"]["services"],
        k["cpu_ms_per_request"]["postgres"],
        f"{100 * others:.0f}%",
        goal_verdict(k["latency_ms"], sum(k["errors"].values())),
    ]


def print_shapes(shapes: dict[str, Any], size: int) -> None:
    print(
        f"\nDatabase time of one request at {size:,} documents over the {len(shapes['per_pair'])} pairs: its "
        f"statements in order, as cortex_app with the org bound, custom plans, best of {shapes['reps']} "
        "(bench/feed_shapes.py; the SQL's counts and pages checked equal to the facet index's):"
    )
    rows = [[name, s["mean"], s["p50"], s["p90"], s["max"]] for name, s in shapes["spread_ms"].items()]
    print(table(["request, statements", "mean ms", "p50 ms", "p90 ms", "max ms"], rows))
    unfiltered = shapes["no_filter_facets_ms"]
    print("facets without filters: " + "; ".join(f"{k} {v:,.0f} ms" for k, v in unfiltered.items()))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.feed", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000", help="document counts, ascending (default 10000,100000)")
    parser.add_argument("--requests", type=int, default=300, help="measured requests per kind and size (default 300)")
    parser.add_argument("--context-requests", type=int, default=40, help="for facets-all (default 40)")
    parser.add_argument("--warmup", type=int, default=40, help="warm-up requests per kind and size (default 40)")
    parser.add_argument("--concurrency", type=int, default=4, help="concurrent clients (default 4)")
    parser.add_argument("--single-requests", type=int, default=40, help="requests from one client alone")
    parser.add_argument("--limit", type=int, default=20, help="feed page size (default 20)")
    parser.add_argument("--seed", type=int, default=17, help="data seed (default 17)")
    parser.add_argument("--explain", action=argparse.BooleanOptionalAction, default=True, help="EXPLAIN ANALYZE")
    parser.add_argument(
        "--experiments", action=argparse.BooleanOptionalAction, default=True, help="try EXPERIMENTS by hand"
    )
    parser.add_argument(
        "--shapes", action=argparse.BooleanOptionalAction, default=True, help="time proposed statement shapes"
    )
    parser.add_argument("--shape-reps", type=int, default=3, help="best of N per shape and pair (default 3)")
    args = parser.parse_args(argv)
    args.size_list = [int(s) for s in args.sizes.split(",") if s.strip()]
    if args.size_list != sorted(set(args.size_list)) or not args.size_list:
        parser.error("--sizes must be distinct document counts in ascending order")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sizes: list[int] = args.size_list
    load_before = os.getloadavg()
    # No request here has `q`: the aggregator needs no query embedder (and its model would only take memory).
    os.environ.setdefault("CORTEX_AGGREGATOR_EMBEDDER", "none")
    print("starting PostgreSQL, NATS, aggregator and gateway…", flush=True)
    with deployment("feed", services=("aggregator", "gateway")) as dep:
        measured = asyncio.run(run_sizes(dep, sizes, args))
    probes = measured.pop("_probes")
    experiments = measured["experiments"]
    report: dict[str, Any] = {
        "benchmark": "feed",
        "environment": environment() | {"load_average_before": load_before, "load_average_after": os.getloadavg()},
        "parameters": {
            "sizes": sizes,
            "requests": args.requests,
            "context_requests": args.context_requests,
            "warmup": args.warmup,
            "concurrency": args.concurrency,
            "limit": args.limit,
            "seed": args.seed,
            "pair_pool": PAIR_POOL,
            "catalog": {"missions": MISSIONS, "works": WORKS, "teams": TEAMS, "second_team_every": SECOND_TEAM_EVERY},
            "classes": len(CLASSES),
            "tags": len(TAGS),
            "skew": {"class": CLASS_SKEW, "tag": TAG_SKEW, "work": WORK_SKEW},
            "statuses": dict(STATUSES),
            "sources": dict(SOURCES),
            "small_org_documents": SMALL_ORG_DOCUMENTS,
            "goal_ms": {"p50": GOAL_P50_MS, "p99": GOAL_P99_MS},
        },
        **measured,
        "experiments": [{k: v for k, v in e.items() if k != "_probes"} for e in experiments],
    }
    for r in report["sizes"]:
        r["goal"] = {
            k: goal_verdict(r["kinds"][k]["latency_ms"], sum(r["kinds"][k]["errors"].values()))
            for k in (FEED.name, FACETS.name)
        }
    print_report(report, probes, experiments)
    path = write_json("feed", report)
    print(f"\nwritten to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
