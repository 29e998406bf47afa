"""EXPLAIN ANALYZE of exactly the statements one search runs, captured from PostgreSQL's own log.

Nothing is copied from the services: for the length of one probe search, `log_min_duration_statement`
is 0, so the server logs every statement the gateway and aggregator execute, with its bound parameters
and its bind and execute durations (the in-situ cost). Each statement is then prepared again — as the
same role, in one transaction that replays the probe's `SET LOCAL` / `set_config` statements first —
and run under EXPLAIN (ANALYZE, BUFFERS) twice: with a custom plan for these parameter values, and with
the generic plan PostgreSQL may switch a prepared statement to after five executions (asyncpg keeps
statements prepared, so in a long-running service the generic plan is a real possibility).

Needs the server's log file, so only with the embedded PostgreSQL (superuser, log on disk).
"""

import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg

ENTRY = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \S+ \[(\d+)\] (\w+):  (.*)$")
DURATION = re.compile(r"^duration: ([0-9.]+) ms  (parse [^:]*|bind [^:]*|execute [^:]*|statement): (.*)$", re.DOTALL)
PARAMETER = re.compile(r"\$(\d+) = (NULL|'(?:[^']|'')*')")
EXECUTION_TIME = re.compile(r"Execution Time: ([0-9.]+) ms")
PLANNING_TIME = re.compile(r"Planning Time: ([0-9.]+) ms")
NOISE = ("pg_catalog", "pg_reload_conf", "pg_sleep", "ALTER SYSTEM", "typeinfo")
KEPT = ("SELECT", "WITH", "SET ")


@dataclass
class Statement:
    pid: int
    sql: str
    bind_ms: float = 0.0
    execute_ms: float = 0.0
    params: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return label(self.sql)

    @property
    def is_setting(self) -> bool:
        head = self.sql.lstrip().upper()
        return head.startswith("SET ") or "SET_CONFIG(" in head


@dataclass(frozen=True)
class Explained:
    label: str
    in_situ_ms: float  # bind + execute, as the service ran it
    custom_ms: float | None
    generic_ms: float | None
    custom_plan: str
    generic_plan: str
    sql: str


# (label, every fragment the statement contains), first match wins.
LABELS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("both legs: BM25 + dense exact", ("kb_postings", "<=>", "OFFSET 0")),
    ("both legs: BM25 + dense hnsw", ("kb_postings", "<=>")),
    ("items with passages", ("kb_documents d", "unnest", "passage")),
    ("BM25 in memory: refresh", ("pg_snapshot_xmin", "to_tsvector")),
    ("lexical (BM25 postings)", ("kb_postings",)),
    ("lexical (ts_rank)", ("ts_rank",)),
    ("dense exact", ("<=>", "OFFSET 0")),
    ("dense hnsw", ("<=>",)),
    ("embedded chunk count", ("count(*)", "kb_chunks")),
    ("auth: membership", ("org_members",)),
    ("auth: organization", ("FROM organizations",)),
    ("items with passages", ("kb_documents d", "unnest")),
    ("chunk texts", ("FROM kb_chunks", "ANY")),
    ("items by id", ("kb_documents d", "ANY")),
    ("bind organization (set_config)", ("set_config",)),
)


def label(sql: str) -> str:
    flat = " ".join(sql.split())
    return next((name for name, parts in LABELS if all(p in flat for p in parts)), flat[:60])


def _entries(lines: list[str]) -> list[tuple[int, str, str]]:
    entries: list[tuple[int, str, str]] = []
    for line in lines:
        found = ENTRY.match(line)
        if found:
            entries.append((int(found.group(1)), found.group(2), found.group(3)))
        elif entries and line.startswith("\t"):
            pid, level, message = entries[-1]
            entries[-1] = (pid, level, message + "\n" + line[1:])
    return entries


def _kept(sql: str) -> bool:
    return sql.lstrip().upper().startswith(KEPT) and not any(noise in sql for noise in NOISE)


def parse_log(text: str) -> list[Statement]:
    """Executed statements in order, with bind and execute durations and parameters."""
    statements: list[Statement] = []
    binds: dict[int, float] = {}
    last: Statement | None = None
    for pid, level, message in _entries(text.splitlines()):
        if level == "DETAIL" and message.startswith("parameters:") and last is not None and last.pid == pid:
            found = PARAMETER.findall(message)
            last.params = [value for _, value in sorted(found, key=lambda item: int(item[0]))]
            continue
        duration = DURATION.match(message) if level == "LOG" else None
        last = None
        if duration is None:
            continue
        ms, phase, sql = float(duration.group(1)), duration.group(2).split()[0], duration.group(3)
        if phase == "bind":
            binds[pid] = ms
        elif phase == "execute" and _kept(sql):
            last = Statement(pid=pid, sql=sql, bind_ms=binds.pop(pid, 0.0), execute_ms=ms)
            statements.append(last)
        elif phase == "statement":
            statements += [Statement(pid=pid, sql=p, execute_ms=ms) for p in _simple_query_parts(sql) if _kept(p)]
    return statements


def _simple_query_parts(sql: str) -> list[str]:
    """The statements of one simple query: `org_reads` begins its transaction as `BEGIN; SET LOCAL …; …`,
    and without its settings the replay would not see the organization's rows (row-level security). Only
    such a query is split: its settings hold UUIDs and numbers, no semicolon."""
    if not sql.lstrip().upper().startswith("BEGIN;"):
        return [sql]
    return [part.strip() for part in sql.split(";") if part.strip()]


async def _set_statement_logging(connection: asyncpg.Connection, on: bool) -> None:
    if on:
        await connection.execute("ALTER SYSTEM SET log_min_duration_statement = 0")
    else:
        await connection.execute("ALTER SYSTEM RESET log_min_duration_statement")
    await connection.execute("SELECT pg_reload_conf()")


def _size(path: Path) -> int:
    return path.stat().st_size


def _read_from(path: Path, start: int) -> str:
    with path.open("rb") as log:
        log.seek(start)
        return log.read().decode("utf-8", "replace")


@asynccontextmanager
async def logged_statements(connection: asyncpg.Connection, log_file: Path) -> AsyncIterator[list[Statement]]:
    """Log every statement while the block runs; the list is filled when it ends."""
    captured: list[Statement] = []
    start = _size(log_file)
    await _set_statement_logging(connection, on=True)
    await connection.execute("SELECT pg_sleep(0.5)")  # every backend re-reads the configuration
    try:
        yield captured
    finally:
        await _set_statement_logging(connection, on=False)
        captured += parse_log(_read_from(log_file, start))


def _timing(plan: str) -> float | None:
    execution = EXECUTION_TIME.search(plan)
    planning = PLANNING_TIME.search(plan)
    if execution is None:
        return None
    return float(execution.group(1)) + (float(planning.group(1)) if planning else 0.0)


async def _roles(connection: asyncpg.Connection, pids: set[int]) -> dict[int, str]:
    rows = await connection.fetch("SELECT pid, usename FROM pg_stat_activity WHERE pid = ANY($1::int[])", list(pids))
    return {row["pid"]: row["usename"] for row in rows}


def _quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _execute(name: str, statement: Statement) -> str:
    return f"EXECUTE {name}({', '.join(statement.params)})" if statement.params else f"EXECUTE {name}"


async def _explain_one(connection: asyncpg.Connection, name: str, statement: Statement, mode: str) -> str:
    await connection.execute(f"SET LOCAL plan_cache_mode = {mode}")
    rows = await connection.fetch(f"EXPLAIN (ANALYZE, BUFFERS) {_execute(name, statement)}")
    return "\n".join(row[0] for row in rows)


async def explain(connection: asyncpg.Connection, statements: list[Statement]) -> list[Explained]:
    """Replay the captured statements per backend, in order, each explained with custom and generic plans."""
    roles = await _roles(connection, {s.pid for s in statements})
    current = await connection.fetchval("SELECT current_user")
    explained: list[Explained] = []
    for pid in dict.fromkeys(s.pid for s in statements):
        async with connection.transaction():
            role = roles.get(pid, current)
            if role != current:
                await connection.execute(f"SET LOCAL ROLE {_quote_ident(role)}")
            for index, statement in enumerate(s for s in statements if s.pid == pid):
                if statement.sql.lstrip().upper().startswith("SET "):
                    await connection.execute(statement.sql)  # cannot be prepared; has no parameters
                    continue
                name = f"bench_explain_{pid}_{index}"
                await connection.execute(f"PREPARE {name} AS {statement.sql}")
                if statement.is_setting:
                    await connection.execute(_execute(name, statement))
                else:
                    custom = await _explain_one(connection, name, statement, "force_custom_plan")
                    generic = await _explain_one(connection, name, statement, "force_generic_plan")
                    explained.append(
                        Explained(
                            label=statement.label,
                            in_situ_ms=statement.bind_ms + statement.execute_ms,
                            custom_ms=_timing(custom),
                            generic_ms=_timing(generic),
                            custom_plan=custom,
                            generic_plan=generic,
                            sql=statement.sql,
                        )
                    )
                await connection.execute(f"DEALLOCATE {name}")
    return explained


async def explain_search(
    connection: asyncpg.Connection, log_file: Path, search: Callable[[], Awaitable[Any]]
) -> list[Explained]:
    """Run `search` once with statement logging on, then explain what it executed."""
    async with logged_statements(connection, log_file) as captured:
        await search()
    return await explain(connection, captured)
