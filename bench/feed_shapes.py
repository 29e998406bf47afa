"""Statement-level before/after for bench.feed: the aggregator's feed and facet SQL against the shapes it
replaced.

The product's statements are built by the aggregator's own functions (`facets.statement`, as
`facets.facets` runs it, and `items.recent_rows`, recorded instead of executed) and compiled for
asyncpg, so nothing is copied. Each variant runs as the service role with the organization bound
(`SET LOCAL ROLE cortex_app`, `set_config('cortex.organization_id', …, true)`), statements one after
another as the aggregator sends them, on a connection without a statement cache (custom plans), best of
`reps`; the transaction is always rolled back.

Variants:
  facets product         one statement: the candidates (every filter but at most one holds) read as
                         disjoint parts from the covering index kb_documents_facets, every facet
                         counted from them (facets.py)
  facets per facet       BEFORE (migration 0007), kept here for comparison only: one statement per facet,
                         each reading the documents, tags filtered with `tags && …`
  feed product           the tag filter through kb_document_tags (filters.py)
  feed tags &&           BEFORE: the tag filter as `d.tags && …`, which row-level security keeps off any index
"""

import re
import statistics
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg
from sqlalchemy import text
from sqlalchemy.dialects.postgresql import asyncpg as asyncpg_dialect

from cortex_aggregator import facets as facet_queries
from cortex_aggregator import items
from cortex_aggregator.filters import FACETS, document_filter
from cortex_contracts.rpc import FacetsRequest, FeedFilters
from cortex_store.tenancy import APP_ROLE, ORG_SETTING

Pair = tuple[str, str]
Sql = tuple[str, list[Any]]

TAG_TABLE = (
    "d.id IN (SELECT dt.document_id FROM kb_document_tags dt WHERE dt.organization_id = :org"
    " AND dt.tag = ANY(CAST(:f_tag AS text[])))"
)
TAG_ARRAY = "d.tags && CAST(:f_tag AS text[])"
COMPILED_TAG_TABLE = re.compile(
    r"d\.id IN \(SELECT dt\.document_id FROM kb_document_tags dt WHERE dt\.organization_id = \$\d+(?:::UUID)?"
    r" AND dt\.tag = ANY\(CAST\((\$\d+) AS text\[\]\)\)\)"
)

# BEFORE (not product code): the per-facet statements the aggregator ran until migration 0007.
_LIVE = "d.organization_id = :org AND d.deleted_at IS NULL"
_WORK = " JOIN works w ON w.id = d.work_id AND w.organization_id = d.organization_id AND w.deleted_at IS NULL"
PER_FACET = {
    "type": ("d.doc_class", "d.doc_class", "", "d.doc_class IS NOT NULL"),
    "work": ("d.work_id::text", "w.title", _WORK, "true"),
    "mission": (
        "m.id::text",
        "m.title",
        _WORK + " JOIN missions m ON m.id = w.mission_id AND m.organization_id = d.organization_id"
        " AND m.deleted_at IS NULL",
        "true",
    ),
    "team": (
        "t.id::text",
        "t.name",
        " JOIN team_resources tr ON tr.organization_id = d.organization_id AND tr.resource_type = 'work'"
        " AND tr.resource_id = d.work_id AND tr.deleted_at IS NULL"
        " JOIN teams t ON t.id = tr.team_id AND t.organization_id = d.organization_id AND t.deleted_at IS NULL",
        "true",
    ),
    "source": ("d.source", "d.source", "", "true"),
    "status": ("d.status", "d.status", "", "true"),
    "tag": ("tag", "tag", " CROSS JOIN LATERAL unnest(d.tags) AS tag", "true"),
}


def _compiled(statement: Any, params: dict[str, Any]) -> Sql:
    compiled = statement.bindparams(**params).compile(dialect=asyncpg_dialect.dialect())  # type: ignore[no-untyped-call]
    return compiled.string, [params[name] for name in compiled.positiontup]


def _filters(pair: Pair | None) -> FeedFilters:
    return FeedFilters() if pair is None else FeedFilters(type=[pair[0]], tag=[pair[1]])


def product_facets(org: uuid.UUID, pair: Pair | None) -> list[Sql]:
    """The counting statement `facets.facets` runs for these filters (an org with Missions and Teams)."""
    request = FacetsRequest(organization_id=org, filters=_filters(pair))
    sql, params = facet_queries.statement(request, list(FACETS))
    return [_compiled(text(sql), {"org": org, **params})]


def per_facet_facets(org: uuid.UUID, pair: Pair | None) -> list[Sql]:
    """BEFORE: one statement per facet, each honouring every filter but its own."""
    statements = []
    for facet, (value, label, joins, condition) in PER_FACET.items():
        where = document_filter(_filters(pair), except_facet=facet)
        sql = f"""
            SELECT {value} AS value, min({label}) AS label, count(*) AS count
            FROM kb_documents d{joins}
            WHERE {_LIVE} AND {condition}{where.sql.replace(TAG_TABLE, TAG_ARRAY)}
            GROUP BY 1 ORDER BY count DESC, label, value LIMIT {facet_queries.MAX_VALUES}
        """
        statements.append(_compiled(text(sql), {"org": org, **where.params}))
    return statements


class _Recorder:
    """Stands in for an AsyncSession: keeps what would have been executed, returns no rows."""

    def __init__(self) -> None:
        self.statements: list[tuple[Any, dict[str, Any]]] = []

    async def execute(self, statement: Any, params: dict[str, Any] | None = None) -> list[Any]:
        self.statements.append((statement, params or {}))
        return []


async def product_feed(org: uuid.UUID, pair: Pair, limit: int) -> list[Sql]:
    """The statement `feed` runs for a first page without `q`."""
    recorder = _Recorder()
    where = document_filter(_filters(pair))
    await items.recent_rows(recorder, org, where, limit + 1, None)  # type: ignore[arg-type]
    return [_compiled(statement, params) for statement, params in recorder.statements]


def with_tag_array(statements: Sequence[Sql]) -> list[Sql]:
    """BEFORE: the same statements with the tag filter as `tags && …`."""
    changed = []
    for sql, args in statements:
        replaced, found = COMPILED_TAG_TABLE.subn(r"d.tags && CAST(\1 AS text[])", sql)
        assert found == 1, "the feed's tag filter is no longer kb_document_tags"
        changed.append((replaced, args))
    return changed


@dataclass(frozen=True)
class Timed:
    ms: float  # best of the repetitions, all statements in order
    rows: list[list[Any]]  # per statement, from the last repetition


async def run_as_service(dsn: str, org: uuid.UUID, statements: Sequence[Sql], *, reps: int) -> Timed:
    """The statements in one transaction as the service role with the org bound; always rolled back."""
    connection = await asyncpg.connect(dsn, statement_cache_size=0)
    try:
        best = float("inf")
        rows: list[list[Any]] = []
        for _ in range(reps):
            transaction = connection.transaction()
            await transaction.start()
            try:
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


def _per_facet_counts(rows: list[list[Any]]) -> dict[tuple[str, str], int]:
    return {(facet, r["value"]): r["count"] for facet, found in zip(PER_FACET, rows, strict=True) for r in found}


def _product_counts(rows: list[list[Any]]) -> dict[tuple[str, str], int]:
    return {(r["facet"], r["value"]): int(r["count"]) for r in rows[0]}


async def _facet_variants(dsn: str, org: uuid.UUID, pair: Pair | None, reps: int) -> dict[str, float]:
    product = await run_as_service(dsn, org, product_facets(org, pair), reps=reps)
    before = await run_as_service(dsn, org, per_facet_facets(org, pair), reps=reps)
    want, got = _per_facet_counts(before.rows), _product_counts(product.rows)
    # Equal counts for every value both return (ties at the 100-value cut may pick different values).
    if any(got[key] != count for key, count in want.items() if key in got):
        raise AssertionError(f"the product's facet counts differ from the per-facet statements' for {pair}")
    return {"product": product.ms, "per facet (before)": before.ms}


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
        row |= {f"facets {name}": ms for name, ms in (await _facet_variants(dsn, org, pair, reps)).items()}
        feed = await product_feed(org, pair, limit)
        product = await run_as_service(dsn, org, feed, reps=reps)
        before = await run_as_service(dsn, org, with_tag_array(feed), reps=reps)
        if [r["id"] for r in product.rows[0]] != [r["id"] for r in before.rows[0]]:
            raise AssertionError(f"the feed's items differ between the tag filters for {pair}")
        row |= {"feed product": product.ms, "feed tags && (before)": before.ms}
        per_pair.append(row)
    names = [k for k in per_pair[0] if k.startswith(("facets ", "feed "))]
    return {
        "reps": reps,
        "per_pair": per_pair,
        "spread_ms": {name: _spread([r[name] for r in per_pair]) for name in names},
        "no_filter_facets_ms": await _facet_variants(dsn, org, None, reps),
    }
