"""The HNSW graph over `kb_chunks.embedding` (migration 0014): who is in it, and how a walk is planned."""

from sqlalchemy import TextClause, text

# Up to this many embedded passages an organization is scanned exactly; past it the indexer admits it to
# the graph, and the aggregator walks the graph for it.
EXACT_SCAN_MAX_CHUNKS = 5_000

# Before a walk, for the rest of its transaction (`:ef` is its hnsw.ef_search). Sorting priced out: the
# planner must walk the graph, which the count behind the decision to walk says is right. Left to choose,
# it estimates the org's rows from no value (generic plans) or from statistics that do not know every
# org, and the top-k sort over them came out cheaper often enough: bench/search at 10k ran every walk as
# a 20 ms exact scan in nine deployments of fourteen. Later statements of the transaction sort wherever
# they must (no plan avoids it).
WALK_SETTINGS = "set_config('enable_sort', 'off', true), set_config('hnsw.ef_search', :ef, true)"
TO_THE_GRAPH = text(f"SELECT {WALK_SETTINGS}")


def walk_settings(ef_search: int) -> str:
    """The same settings as `TO_THE_GRAPH`, as statements for a simple query (`org_reads`)."""
    return f"SET LOCAL enable_sort = off; SET LOCAL hnsw.ef_search = {int(ef_search)}"


def graph_candidates(restrict: str) -> TextClause:
    """How many embedded candidate chunks (`restrict`: more conditions on `c`) an organization in the graph
    has, counted no further than `:cap`: the caller asks only whether they are more than the exact-scan
    bound. 0 for an organization outside the graph (it is scanned exactly). Counting every chunk made a
    search of a 95k-chunk organization 311 ms at p50 against 31 ms capped (bench/vector_stores)."""
    return text(
        "SELECT CASE WHEN o.ann_indexed THEN (SELECT count(*) FROM (SELECT 1 FROM kb_chunks c"
        f" WHERE c.organization_id = :org AND c.embedding IS NOT NULL{restrict} LIMIT :cap) capped)"
        " ELSE 0 END FROM organizations o WHERE o.id = :org"
    )
