"""`cortex run` starts the services as cortex_app, under row-level security, wherever it can. Before (QA 28),
with a DATABASE_URL of one's own they ran as its user (often the owner, or a superuser: RLS off), silently."""

from sqlalchemy.engine import make_url

from cortex_cli.main import service_database_url

OWNER = "postgresql+asyncpg://owner:0wner%40pw@db.internal:5432/cortex?ssl=require"


def test_on_a_given_server_with_the_app_password_the_services_are_cortex_app() -> None:
    url = make_url(service_database_url(OWNER, "app p@ss:w/rd")(OWNER))
    assert (url.username, url.password, url.host, url.database) == (
        "cortex_app",
        "app p@ss:w/rd",
        "db.internal",
        "cortex",
    )
    assert url.query == {"ssl": "require"}


def test_on_the_embedded_server_the_services_are_cortex_app_by_trust() -> None:
    embedded = "postgresql+asyncpg://postgres@/postgres?host=/tmp/cx/pg"
    url = make_url(service_database_url(None, None)(embedded))
    assert (url.username, url.password) == ("cortex_app", None)


def test_without_the_app_password_a_given_url_is_used_as_it_is() -> None:
    assert service_database_url(OWNER, None)(OWNER) == OWNER
