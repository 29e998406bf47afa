"""How long a new database connection may take: libpq's `connect_timeout` in the URL, else 10 s."""

from cortex_store.database import CONNECT_SECONDS, asyncpg_dsn, connect_seconds


def test_a_url_without_connect_timeout_gets_ten_seconds_and_zero_means_no_limit() -> None:
    assert connect_seconds("postgresql://db/cortex") == CONNECT_SECONDS == 10
    assert connect_seconds("postgresql://db/cortex?connect_timeout=2.5") == 2.5
    assert connect_seconds("postgresql://db/cortex?connect_timeout=0") is None


def test_asyncpg_is_not_given_connect_timeout_which_it_would_send_to_the_server() -> None:
    dsn = asyncpg_dsn("postgresql://db/cortex?connect_timeout=3&sslmode=require")
    assert (dsn, "connect_timeout" in dsn) == ("postgresql://db/cortex?sslmode=require", False)
