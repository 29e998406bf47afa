"""SQLAlchemy-style `:name` parameters become asyncpg's positional ones; casts are left alone."""

from cortex_store.records import positional


def test_named_parameters_become_positional_in_first_use_order() -> None:
    sql = "SELECT CAST(:qvec AS vector), x::text FROM t WHERE org = :org AND y = ANY(:ids) AND z = :org LIMIT :n"
    statement, names = positional(sql)
    assert names == ("qvec", "org", "ids", "n")
    assert statement == ("SELECT CAST($1 AS vector), x::text FROM t WHERE org = $2 AND y = ANY($3) AND z = $2 LIMIT $4")


def test_a_statement_without_parameters_is_unchanged() -> None:
    assert positional("SELECT now()::date") == ("SELECT now()::date", ())
