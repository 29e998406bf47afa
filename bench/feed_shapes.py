"""Statement-level what-ifs for bench.feed: the aggregator's own feed and facet SQL against proposed shapes.

The product's statements are built by calling the aggregator's own functions (`facets._facet` per facet,
as `facets.facets` does, and `items.recent_rows`) with a session that records instead of executing;
they are compiled for asyncpg, so nothing is copied. Each variant runs as the service role with the
organization bound (`SET LOCAL ROLE cortex_app`, `set_config('cortex.organization_id', …, true)`),
statements one after another as the aggregator sends them, on a connection without a statement cache
(custom plans), best of `reps`; the transaction is always rolled back.

Variants (none of them is product code):
  product     the aggregator's statements as they are
  count(*)    the same, `count(DISTINCT d.id)` → `count(*)`: no per-group sort of (value, id) (only while
              the product still counts DISTINCT; it counts with count(*) since commit 5412781)
  one scan    PROPOSED: one statement — the documents any facet needs (all active filters but at most
              one hold) read once, match flags per row, every facet aggregated from that set
  … +leakproof  with `arrayoverlap` (the `&&` of `tags && …`) marked LEAKPROOF inside the rolled-back
              transaction, so that row-level security lets the planner use the GIN index on tags
"""

import statistics
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg
from sqlalchemy.dialects.postgresql import asyncpg as asyncpg_dialect

from cortex_aggregator import facets as facet_queries
from cortex_aggregator import items
from cortex_aggregator.filters import document_filter
from cortex_contracts.rpc import FacetsRequest, FeedFilters
from cortex_store.tenancy import APP_ROLE, ORG_SETTING

Pair = tuple[str, str]
Sql = tuple[str, list[Any]]

LEAKPROOF = "ALTER FUNCTION arrayoverlap(anyarray, anyarray) LEAKPROOF"
COUNT_DISTINCT = "count(DISTINCT d.id)"

# PROPOSED (not product code): every facet of a type+tag request from one read of the documents. The
# candidate rows are those any facet needs — each facet drops its own filter, so: every filter but at
# most one holds (with two filters: either holds). Mission and Team counts are sums of the per-Work
# counts (a document has one Work; a Work one Mission; team_resources has one row per Team and Work).
ONE_SCAN = """
WITH d AS MATERIALIZED (
    SELECT d.doc_class, d.work_id, d.source, d.status, d.tags, {in_type} AS in_type, {in_tag} AS in_tag
    FROM kb_documents d
    WHERE d.organization_id = $1 AND d.deleted_at IS NULL{candidates}
), per_work AS (
    SELECT work_id, count(*) AS n FROM d WHERE in_type AND in_tag AND work_id IS NOT NULL GROUP BY work_id
), counted AS (
    SELECT 'type' AS facet, doc_class AS value, doc_class AS label, count(*) AS count
      FROM d WHERE in_tag AND doc_class IS NOT NULL GROUP BY doc_class
    UNION ALL
    SELECT 'work', w.id::text, w.title, pw.n FROM per_work pw
      JOIN works w ON w.id = pw.work_id AND w.organization_id = $1 AND w.deleted_at IS NULL
    UNION ALL
    SELECT 'mission', m.id::text, min(m.title), sum(pw.n) FROM per_work pw
      JOIN works w ON w.id = pw.work_id AND w.organization_id = $1 AND w.deleted_at IS NULL
      JOIN missions m ON m.id = w.mission_id AND m.organization_id = $1 AND m.deleted_at IS NULL
      GROUP BY m.id
    UNION ALL
    SELECT 'team', t.id::text, min(t.name), sum(pw.n) FROM per_work pw
      JOIN team_resources tr ON tr.organization_id = $1 AND tr.resource_type = 'work'
       AND tr.resource_id = pw.work_id AND tr.deleted_at IS NULL
      JOIN teams t ON t.id = tr.team_id AND t.organization_id = $1 AND t.deleted_at IS NULL
      GROUP BY t.id
    UNION ALL
    SELECT 'source', source, source, count(*) FROM d WHERE in_type AND in_tag GROUP BY source
    UNION ALL
    SELECT 'status', status, status, count(*) FROM d WHERE in_type AND in_tag GROUP BY status
    UNION ALL
    SELECT 'tag', tag, tag, count(*) FROM d CROSS JOIN LATERAL unnest(d.tags) AS tag WHERE in_type GROUP BY tag
)
SELECT facet, value, label, count FROM (
    SELECT *, row_number() OVER (PARTITION BY facet ORDER BY count DESC, label, value) AS rank FROM counted
) ranked WHERE rank <= {max_values}
"""


def one_scan(org: uuid.UUID, pair: Pair | None) -> Sql:
    if pair is None:
        sql = ONE_SCAN.format(in_type="true", in_tag="true", candidates="", max_values=facet_queries.MAX_VALUES)
        return sql, [org]
    sql = ONE_SCAN.format(
        in_type="d.doc_class = ANY($2::text[])",
        in_tag="d.tags && $3::text[]",
        candidates=" AND (d.doc_class = ANY($2::text[]) OR d.tags && $3::text[])",
        max_values=facet_queries.MAX_VALUES,
    )
    return sql, [org, [pair[0]], [pair[1]]]


class _Recorder:
    """Stands in for an AsyncSession: keeps what would have been executed, returns no rows."""

    def __init__(self) -> None:
        self.statements: list[tuple[Any, dict[str, Any]]] = []

    async def execute(self, statement: Any, params: dict[str, Any] | None = None) -> list[Any]:
        self.statements.append((statement, params or {}))
        return []


def _compiled(statement: Any, params: dict[str, Any]) -> Sql:
    compiled = statement.bindparams(**params).compile(dialect=asyncpg_dialect.dialect())  # type: ignore[no-untyped-call]
    return compiled.string, [params[name] for name in compiled.positiontup]


def _filters(pair: Pair | None) -> FeedFilters:
    return FeedFilters() if pair is None else FeedFilters(type=[pair[0]], tag=[pair[1]])


async def product_facets(org: uuid.UUID, pair: Pair | None) -> list[Sql]:
    """The statements `facets.facets` runs for these filters (an org with Missions and Teams)."""
    recorder = _Recorder()
    request = FacetsRequest(organization_id=org, filters=_filters(pair))
    for facet in facet_queries._GROUPINGS:  # the order facets.facets asks them in
        await facet_queries._facet(recorder, org, request, facet)  # type: ignore[arg-type]
    return [_compiled(statement, params) for statement, params in recorder.statements]


async def product_feed(org: uuid.UUID, pair: Pair, limit: int) -> list[Sql]:
    """The statement `feed` runs for a first page without `q`."""
    recorder = _Recorder()
    where = document_filter(_filters(pair))
    await items.recent_rows(recorder, org, where, limit + 1, None)  # type: ignore[arg-type]
    return [_compiled(statement, params) for statement, params in recorder.statements]


def counted(statements: Sequence[Sql]) -> list[Sql]:
    changed = [(sql.replace(COUNT_DISTINCT, "count(*)"), args) for sql, args in statements]
    assert all(COUNT_DISTINCT in sql for sql, _ in statements), "the facet SQL no longer counts DISTINCT d.id"
    return changed


@dataclass(frozen=True)
class Timed:
    ms: float  # best of the repetitions, all statements in order
    rows: list[list[Any]]  # per statement, from the last repetition


async def run_as_service(
    dsn: str, org: uuid.UUID, statements: Sequence[Sql], *, reps: int, leakproof: bool = False
) -> Timed:
    """The statements in one transaction as the service role with the org bound; always rolled back."""
    connection = await asyncpg.connect(dsn, statement_cache_size=0)
    try:
        best = float("inf")
        rows: list[list[Any]] = []
        for _ in range(reps):
            transaction = connection.transaction()
            await transaction.start()
            try:
                if leakproof:
                    await connection.execute(LEAKPROOF)  # superuser only; undone by the rollback
                await connection.execute(f"SET LOCAL ROLE {APP_ROLE}")
                await connection.execute("SELECT set_config($1, $2, true)", ORG_SETTING, str(org))
                started = time.perf_counter()
                rows = [list(await connection.fetch(sql, *args)) for sql, args in statements]
                best = min(best, time.perf_counter() - started)
            finally:
                await transaction.rollback()
        return Timed(best * 1000, rows)
    finally:
        await connection.close()


def _product_counts(rows: list[list[Any]]) -> dict[str, dict[str, int]]:
    return {
        facet: {r["value"]: r["count"] for r in facet_rows}
        for facet, facet_rows in zip(facet_queries._GROUPINGS, rows, strict=True)
    }


def _one_scan_counts(rows: list[list[Any]]) -> dict[str, dict[str, int]]:
    found: dict[str, dict[str, int]] = {}
    for r in rows[0]:
        found.setdefault(r["facet"], {})[r["value"]] = int(r["count"])
    return found


def same_counts(product: Timed, other: Timed, *, one_statement: bool) -> bool:
    """Equal counts for every value the product returned (ties at the 100-value cut may differ)."""
    want = _product_counts(product.rows)
    got = _one_scan_counts(other.rows) if one_statement else _product_counts(other.rows)
    return all(
        got.get(facet, {}).get(value) == count for facet, values in want.items() for value, count in values.items()
    )


async def _facet_variants(dsn: str, org: uuid.UUID, pair: Pair | None, reps: int) -> dict[str, float]:
    product = await product_facets(org, pair)
    statements = {"product": product}
    if any(COUNT_DISTINCT in sql for sql, _ in product):  # the aggregator counted DISTINCT d.id until 5412781
        statements["count(*)"] = counted(product)
    statements["one scan"] = [one_scan(org, pair)]
    out: dict[str, float] = {}
    for leakproof in (False, True) if pair is not None else (False,):  # no tag filter: nothing to leak
        timed = {
            name: await run_as_service(dsn, org, sql, reps=reps, leakproof=leakproof)
            for name, sql in statements.items()
        }
        for name, result in timed.items():
            if name != "product" and not same_counts(timed["product"], result, one_statement=name == "one scan"):
                raise AssertionError(f"{name} counts differ from the product's for {pair}")
            out[name + (" +leakproof" if leakproof else "")] = result.ms
    return out


def _spread(values: Sequence[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "mean": statistics.fmean(ordered),
        "p50": statistics.median(ordered),
        "p90": ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))],
        "max": ordered[-1],
    }


async def compare(
    dsn: str, org: uuid.UUID, pairs: Sequence[Pair], counts: dict[Pair, int], limit: int, reps: int
) -> dict[str, Any]:
    """Database time of one request per pair under every variant; the spread over the pairs."""
    per_pair = []
    for pair in pairs:
        row: dict[str, Any] = {"type": pair[0], "tag": pair[1], "matches": counts.get(pair, 0)}
        facets_ms = await _facet_variants(dsn, org, pair, reps)
        row |= {f"facets {name}": ms for name, ms in facets_ms.items()}
        feed = await product_feed(org, pair, limit)
        row["feed product"] = (await run_as_service(dsn, org, feed, reps=reps)).ms
        row["feed product +leakproof"] = (await run_as_service(dsn, org, feed, reps=reps, leakproof=True)).ms
        per_pair.append(row)
    names = [k for k in per_pair[0] if k.startswith(("facets ", "feed "))]
    unfiltered = await _facet_variants(dsn, org, None, reps)
    return {
        "reps": reps,
        "per_pair": per_pair,
        "spread_ms": {name: _spread([r[name] for r in per_pair]) for name in names},
        "no_filter_facets_ms": unfiltered,
    }
