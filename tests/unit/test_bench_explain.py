"""bench/explain.py replays what one search ran: the organization setting must come with it."""

from bench.explain import parse_log

ORG = "7db0f74d-0164-4f3c-a20b-0516ec94c093"
AT = "2026-12-02 08:59:01.123 UTC [77]"
SELECT = "SELECT 1 FROM kb_chunks WHERE organization_id = $1"
LOG = f"""\
{AT} LOG:  duration: 0.050 ms  statement: BEGIN; SET LOCAL cortex.organization_id = '{ORG}'; SET LOCAL enable_sort = off
{AT} LOG:  duration: 0.010 ms  bind s1: {SELECT}
{AT} DETAIL:  parameters: $1 = '{ORG}'
{AT} LOG:  duration: 0.200 ms  execute s1: {SELECT}
{AT} DETAIL:  parameters: $1 = '{ORG}'
{AT} LOG:  duration: 0.020 ms  statement: COMMIT
"""


def test_the_settings_sent_with_begin_are_replayed_before_the_query() -> None:
    statements = parse_log(LOG)

    assert [s.sql for s in statements] == [
        f"SET LOCAL cortex.organization_id = '{ORG}'",
        "SET LOCAL enable_sort = off",
        SELECT,
    ]
    assert statements[-1].params == [f"'{ORG}'"]
    assert (statements[-1].bind_ms, statements[-1].execute_ms) == (0.01, 0.2)
