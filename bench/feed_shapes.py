"""Statement-level before/after for bench.feed: the database work of one feed or facets request now
(the in-memory facet index) against the SQL the aggregator ran before it.

The product's statements are the aggregator's own (`facet_indexes.REFRESH_SQL`, the statement each
request runs to bring the index up to date, with nothing changed since the last; `items.BY_IDS` for the
feed's page), and the index's answers come from the aggregator's own `OrgIndex`, loaded here with
`facet_indexes.LOAD_SQL` and `facet_catalog.CATALOG_SQL` as the service loads it — nothing is copied.
Each variant runs as the service role with the organization bound (`SET LOCAL ROLE cortex_app`,
`set_config('cortex.organization_id', …, true)`), statements one after another, on a connection without
a statement cache (custom plans), best of `reps`; the transaction is always rolled back.

Variants:
  facets product         the refresh statement (the counting is numpy in the aggregator, not timed here)
  facets per facet       BEFORE (migration 0007), kept for comparison only: one statement per facet, each
                         reading the documents, tags filtered with `tags && …`; its counts are checked
                         equal to the index's
  feed product           the refresh statement, then the page's rows by id (ids from the index)
  feed sql (before)      BEFORE: the newest matching rows straight from kb_documents, the tag filter
                         through kb_document_tags; its ids are checked equal to the index's
"""

import statistics
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg
from sqlalchemy import text
from sqlalchemy.dialects.postgresql import asyncpg as asyncpg_dialect

from cortex_aggregator import items
from cortex_aggregator.facet_catalog import CATALOG_SQL, catalog_from_rows
from cortex_aggregator.facet_index import OrgIndex
from cortex_aggregator.facet_indexes import LOAD_SQL, REFRESH_SQL
from cortex_aggregator.facets import MAX_VALUES
from cortex_aggregator.filters import FACETS, document_filter
from cortex_contracts.rpc import FeedFilters
from cortex_store.tenancy import APP_ROLE, ORG_SETTING

Pair = tuple[str, str]
Sql = tuple[str, list[Any]]

TAG_TABLE = (
    "d.id IN (SELECT dt.document_id FROM kb_document_tags dt WHERE dt.organization_id = :org"
    " AND dt.tag = ANY(CAST(:f_tag AS text[])))"
)
TAG_ARRAY = "d.tags && CAST(:f_tag AS text[])"

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


async def load_index(dsn: str, org: uuid.UUID) -> tuple[OrgIndex, str]:
    """The aggregator's index of the organization, loaded as the service loads it; and the snapshot xmin."""
    timed = await run_as_service(dsn, org, [(LOAD_SQL, [org]), (CATALOG_SQL, [org])], reps=1)
    documents, catalog = timed.rows
    index = OrgIndex()
    index.apply([row for row in documents if row["id"] is not None])
    index.catalog = catalog_from_rows(catalog)
    return index, str(documents[0]["xmin"])


def refresh(org: uuid.UUID, xmin: str) -> list[Sql]:
    """What every request runs first: the changes since the last read (none here)."""
    return [(REFRESH_SQL, [org, xmin])]


def per_facet_facets(org: uuid.UUID, pair: Pair | None) -> list[Sql]:
    """BEFORE: one statement per facet, each honouring every filter but its own."""
    statements = []
    for facet, (value, label, joins, condition) in PER_FACET.items():
        where = document_filter(_filters(pair), except_facet=facet)
        sql = f"""
            SELECT {value} AS value, min({label}) AS label, count(*) AS count
            FROM kb_documents d{joins}
            WHERE {_LIVE} AND {condition}{where.sql.replace(TAG_TABLE, TAG_ARRAY)}
            GROUP BY 1 ORDER BY count DESC, label, value LIMIT {MAX_VALUES}
        """
        statements.append(_compiled(text(sql), {"org": org, **where.params}))
    return statements


def sql_feed(org: uuid.UUID, pair: Pair, limit: int) -> list[Sql]:
    """BEFORE: the newest matching rows straight from the table, keyset-ordered."""
    where = document_filter(_filters(pair))
    sql = f"{items.ITEM_SELECT}{where.sql} ORDER BY d.updated_at DESC, d.id DESC LIMIT :n"
    return [_compiled(text(sql), {"org": org, "n": limit + 1, **where.params})]


def page_rows(org: uuid.UUID, ids: list[uuid.UUID]) -> list[Sql]:
    return [_compiled(text(items.BY_IDS), {"org": org, "ids": ids})]


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


def _index_counts(index: OrgIndex, pair: Pair | None) -> dict[tuple[str, str], int]:
    counted = index.count(_filters(pair), FACETS)
    return {(facet, value): n for facet, found in counted.items() for value, _, n in found.values}


async def _facet_variants(
    dsn: str, org: uuid.UUID, index: OrgIndex, xmin: str, pair: Pair | None, reps: int
) -> dict[str, float]:
    product = await run_as_service(dsn, org, refresh(org, xmin), reps=reps)
    before = await run_as_service(dsn, org, per_facet_facets(org, pair), reps=reps)
    want, got = _per_facet_counts(before.rows), _index_counts(index, pair)
    # Equal counts for every value the statements return (they keep the 100 largest per facet).
    if any(got.get(key) != count for key, count in want.items()):
        raise AssertionError(f"the index's facet counts differ from the per-facet statements' for {pair}")
    return {"product (refresh)": product.ms, "per facet (before)": before.ms}


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
    index, xmin = await load_index(dsn, org)
    per_pair = []
    for pair in pairs:
        row: dict[str, Any] = {"type": pair[0], "tag": pair[1], "matches": counts.get(pair, 0)}
        row |= {f"facets {name}": ms for name, ms in (await _facet_variants(dsn, org, index, xmin, pair, reps)).items()}
        ids = [key.id for key in index.newest(_filters(pair), None, limit + 1)]
        product = await run_as_service(dsn, org, [*refresh(org, xmin), *page_rows(org, ids[:limit])], reps=reps)
        before = await run_as_service(dsn, org, sql_feed(org, pair, limit), reps=reps)
        if ids != [r["id"] for r in before.rows[0]]:
            raise AssertionError(f"the index's feed page differs from the SQL's for {pair}")
        row |= {"feed product (refresh + rows)": product.ms, "feed sql (before)": before.ms}
        per_pair.append(row)
    names = [k for k in per_pair[0] if k.startswith(("facets ", "feed "))]
    return {
        "reps": reps,
        "per_pair": per_pair,
        "spread_ms": {name: _spread([r[name] for r in per_pair]) for name in names},
        "no_filter_facets_ms": await _facet_variants(dsn, org, index, xmin, None, reps),
    }
