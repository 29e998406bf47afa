"""The plugin runtime end to end: `GET /api/memory/plugins` and `cortex plugins list|use` on real PostgreSQL.

Next to the installed plugins, three fake rerankers are registered by patching entry-point discovery:
`reverse` loads, `exploding`'s factory raises, and `gone` points at a module that is not installed. The
gateways here are started after the patch (the session's may already have loaded its plugins): one for the
module, and one per environment pin, since a gateway reads its pins when it starts. The CLI functions
build their registries after the patch too.
"""

import asyncio
import os
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from cortex_cli import config
from cortex_cli.main import main
from cortex_cli.plugins import choose_plugin, list_plugins, render
from cortex_gateway.tokens import issue_token
from cortex_plugins import PluginChoiceError, PluginRegistry, discovery
from cortex_plugins.testing import FakeEntryPoint
from cortex_store.database import make_engine, make_sessionmaker
from cortex_store.tenancy import bind_organization
from tests.cli_runs import cli, cli_process
from tests.conftest import Org
from tests.embedding_server import FakeEmbeddingServer
from tests.gateways import running_gateway
from tests.infrastructure import Infrastructure
from tests.org_clients import client_for, close_org, create_org
from tests.own_database import on_database, own_database, scalar
from tests.services import SECRET

pytestmark = pytest.mark.e2e

CATEGORIES = ["extractor", "chunker", "embedder", "vector_store", "reranker", "rag", "memory", "summarizer"]


class ReverseReranker:
    name = "reverse"

    async def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        return [float(position) for position in range(len(passages))]  # the last passage first

    async def health(self) -> str | None:
        return None


def exploding_factory() -> ReverseReranker:
    raise RuntimeError("reranker credentials are missing")


FAKE_RERANKERS = [
    FakeEntryPoint("reverse", "fake_rerankers:reverse", ReverseReranker),
    FakeEntryPoint("exploding", "fake_rerankers:exploding", exploding_factory),
    FakeEntryPoint("gone", "not_installed_reranker:create", ModuleNotFoundError("No module named 'not_installed'")),
]


@pytest.fixture(scope="module")
def fake_plugins(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:

    def with_fakes(*, group: str) -> Sequence[EntryPoint | FakeEntryPoint]:
        return [*entry_points(group=group), *(FAKE_RERANKERS if group == "cortex.reranker" else [])]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(discovery, "entry_points", with_fakes)
        for category in CATEGORIES:  # pins are read when a gateway or a CLI command starts
            patch.delenv(f"CORTEX_PLUGIN_{category.upper()}", raising=False)
        # The listing health-checks every plugin; Qdrant's local mode would otherwise open ./.cortex/qdrant.
        patch.setenv("CORTEX_QDRANT_PATH", str(tmp_path_factory.mktemp("qdrant")))
        patch.delenv("CORTEX_MEM0_URL", raising=False)  # the real mem0 plugin, where nobody set one up
        yield


@pytest.fixture(scope="module")
async def gateway(migrated: Infrastructure, fake_plugins: None) -> AsyncIterator[str]:
    async with running_gateway(migrated) as base_url:
        yield base_url


@pytest.fixture
async def plugin_org(migrated: Infrastructure, gateway: str) -> AsyncIterator[Org]:
    org = await create_org(migrated.database_url, gateway, SECRET, prefix="plugins")
    yield org
    await close_org(org)


async def listing(org: Org, base_url: str | None = None) -> dict[str, dict[str, Any]]:
    """The admin's view, from the module's gateway or from the one at `base_url`."""
    if base_url is None:
        response = await org.admin.get("/api/memory/plugins")
    else:
        async with client_for(base_url, issue_token(f"admin-{org.slug}", SECRET), org.slug) as admin:
            response = await admin.get("/api/memory/plugins")
    assert response.status_code == 200, response.text
    return {category["category"]: category for category in response.json()["categories"]}


def by_name(category: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {plugin["name"]: plugin for plugin in category["plugins"]}


async def test_an_admin_lists_every_category_and_a_broken_plugin_is_reported(plugin_org: Org) -> None:
    categories = await listing(plugin_org)
    assert list(categories) == CATEGORIES
    rerankers = categories["reranker"]
    assert (rerankers["active"], rerankers["reason"]) == ("none", "default")
    plugins = by_name(rerankers)
    assert plugins["none"] == {
        "name": "none",
        "target": "cortex_plugins.builtins.identity_reranker:create",
        "default": True,
        "loaded": True,
        "health": "ok",
    }
    assert (plugins["reverse"]["loaded"], plugins["reverse"]["health"]) == (True, "ok")
    assert plugins["exploding"]["loaded"] is False
    assert plugins["exploding"]["health"] == "not-loaded"
    assert plugins["exploding"]["error"] == (
        "fake_rerankers:exploding() failed: RuntimeError: reranker credentials are missing"
    )
    assert plugins["gone"]["error"] == "import failed: ModuleNotFoundError: No module named 'not_installed'"
    mem0 = by_name(categories["memory"])["mem0"]
    assert (mem0["loaded"], mem0["health"], mem0["error"]) == (False, "not-configured", "CORTEX_MEM0_URL is not set")
    # The rest of the runtime works regardless.
    for category, default in [
        ("chunker", "heading-paragraph"),
        ("rag", "hybrid"),
        ("memory", "postgres"),
        ("summarizer", "extractive"),
    ]:
        assert (categories[category]["active"], categories[category]["reason"]) == (default, "default"), category
    assert categories["extractor"]["reason"] == "media-type"
    assert by_name(categories["extractor"])["pdf"]["loaded"] is True


async def test_a_member_is_refused_with_a_problem(plugin_org: Org) -> None:
    response = await plugin_org.member.get("/api/memory/plugins")
    assert response.status_code == 403, response.text
    assert response.headers["content-type"].split(";")[0] == "application/problem+json"
    assert response.json()["status"] == 403
    async with httpx.AsyncClient(base_url=str(plugin_org.member.base_url)) as anonymous:
        assert (await anonymous.get("/api/memory/plugins")).status_code == 401


async def test_plugins_use_changes_that_organization_only(
    migrated: Infrastructure, gateway: str, plugin_org: Org, capsys: pytest.CaptureFixture[str]
) -> None:
    other = await create_org(migrated.database_url, gateway, SECRET, prefix="plugins")
    try:
        await choose_plugin(migrated.database_url, plugin_org.id, "reranker", "reverse", PluginRegistry())

        chosen = (await listing(plugin_org))["reranker"]
        assert (chosen["active"], chosen["reason"], chosen["orgChoice"]) == ("reverse", "org", "reverse")
        untouched = (await listing(other))["reranker"]
        assert (untouched["active"], untouched["reason"]) == ("none", "default")
        assert "orgChoice" not in untouched

        # The CLI prints the same view.
        view = await list_plugins(migrated.database_url, plugin_org.id, PluginRegistry())
        assert next(c for c in view.categories if c.category == "reranker").active == "reverse"
        assert await cli(migrated, ["plugins", "list", "--org", plugin_org.slug]) == 0
        printed = capsys.readouterr().out
        assert "reranker: reverse [org]" in printed
        assert "  * reverse" in printed
        assert "  - exploding" in printed
        assert "not loaded: fake_rerankers:exploding() failed: RuntimeError" in printed
        assert "  - mem0                         not configured: CORTEX_MEM0_URL is not set" in printed

        # Choosing again replaces the choice; through the command line too.
        assert await cli(migrated, ["plugins", "use", "--org", plugin_org.slug, "reranker", "none"]) == 0
        assert "reranker = none" in capsys.readouterr().out
        assert (await listing(plugin_org))["reranker"]["reason"] == "org"
        assert (await listing(plugin_org))["reranker"]["active"] == "none"
    finally:
        await close_org(other)


async def test_an_env_pin_overrides_the_org_choice(
    migrated: Infrastructure, plugin_org: Org, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    await choose_plugin(migrated.database_url, plugin_org.id, "reranker", "reverse", PluginRegistry())
    monkeypatch.setenv("CORTEX_PLUGIN_RERANKER", "none")
    async with running_gateway(migrated) as pinned_gateway:
        pinned = (await listing(plugin_org, pinned_gateway))["reranker"]
    assert (pinned["active"], pinned["reason"]) == ("none", "env")
    assert (pinned["envPin"], pinned["orgChoice"]) == ("none", "reverse")
    assert await cli(migrated, ["plugins", "list", "--org", plugin_org.slug]) == 0
    assert "reranker: none [env]" in capsys.readouterr().out
    # The pin is the deployment's: a gateway started without it still follows the organization's choice.
    assert (await listing(plugin_org))["reranker"]["active"] == "reverse"

    # A pin to a broken plugin is not silently replaced: nothing is active, and the listing says why.
    monkeypatch.setenv("CORTEX_PLUGIN_RERANKER", "exploding")
    async with running_gateway(migrated) as broken_gateway:
        broken = (await listing(plugin_org, broken_gateway))["reranker"]
    assert "active" not in broken
    assert broken["reason"] == "none"
    assert broken["detail"].startswith("CORTEX_PLUGIN_RERANKER=exploding: reranker plugin 'exploding' failed to load")


async def test_plugins_use_validates_the_category_and_the_name(
    migrated: Infrastructure, plugin_org: Org, capsys: pytest.CaptureFixture[str]
) -> None:
    registry = PluginRegistry()
    with pytest.raises(PluginChoiceError, match=r"unknown plugin category 'rerankers'; categories: extractor"):
        await choose_plugin(migrated.database_url, plugin_org.id, "rerankers", "none", registry)
    with pytest.raises(PluginChoiceError, match=r"'exploding' failed to load: .*reranker credentials are missing"):
        await choose_plugin(migrated.database_url, plugin_org.id, "reranker", "exploding", registry)
    with pytest.raises(PluginChoiceError, match=r"extractor plugins are not chosen"):
        await choose_plugin(migrated.database_url, plugin_org.id, "extractor", "pdf", registry)

    assert await cli(migrated, ["plugins", "use", "--org", plugin_org.slug, "reranker", "nope"]) == 1
    assert capsys.readouterr().err.strip() == (
        "error: no reranker plugin named 'nope'; installed: exploding, gone, http, none, reverse"
    )
    # Nothing was stored by any of the refused choices.
    assert "orgChoice" not in (await listing(plugin_org))["reranker"]


async def test_plugin_choices_are_behind_row_level_security(migrated: Infrastructure, make_org_ids: Any) -> None:
    first, second = make_org_ids
    await choose_plugin(migrated.database_url, first, "reranker", "reverse", PluginRegistry())
    engine = make_engine(migrated.app_database_url, pool_size=1)
    sessions = make_sessionmaker(engine)
    count = text("SELECT count(*) FROM plugin_choices")
    try:
        async with sessions() as session, session.begin():
            assert await session.scalar(count) == 0  # no organization bound: no rows at all
        async with sessions() as session, session.begin():
            await bind_organization(session, second)
            assert await session.scalar(count) == 0
        async with sessions() as session, session.begin():
            await bind_organization(session, first)
            assert await session.scalar(count) == 1
        with pytest.raises(DBAPIError, match="row-level security"):
            async with sessions() as session, session.begin():
                await bind_organization(session, second)
                await session.execute(
                    text("INSERT INTO plugin_choices (organization_id, category, plugin) VALUES (:org, 'rag', 'x')"),
                    {"org": first},
                )
    finally:
        await engine.dispose()


@pytest.fixture
async def make_org_ids(migrated: Infrastructure, gateway: str) -> AsyncIterator[tuple[uuid.UUID, uuid.UUID]]:
    first = await create_org(migrated.database_url, gateway, SECRET, prefix="plugins")
    second = await create_org(migrated.database_url, gateway, SECRET, prefix="plugins")
    yield first.id, second.id
    await close_org(first)
    await close_org(second)


async def test_the_cli_beside_a_run_sees_and_checks_the_plugins_as_the_run_has_them(
    migrated: Infrastructure,
    plugin_org: Org,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # What `cortex run` writes beside its data: its endpoints and its services' plugin settings.
    config.write_runtime(
        tmp_path,
        {
            "DATABASE_URL": migrated.database_url,
            "NATS_URL": migrated.nats_url,
            "CORTEX_PLUGIN_RERANKER": "none",
            "CORTEX_INDEXER_EMBEDDER": "none",
            "CORTEX_AGGREGATOR_EMBEDDER": "none",
        },
    )
    monkeypatch.setenv("CORTEX_DATA_DIR", str(tmp_path))
    for variable in ("DATABASE_URL", "NATS_URL"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("CORTEX_PLUGIN_RERANKER", "reverse")  # this shell's own, which the services do not have
    monkeypatch.setenv("CORTEX_RERANKER_BASE_URL", "http://127.0.0.1:9")

    assert await asyncio.to_thread(main, ["plugins", "list", "--org", plugin_org.slug]) == 0
    listed = capsys.readouterr().out
    assert "reranker: none [env]" in listed  # before: "reverse [env]", the shell's pin
    assert "the indexer embeds nothing" in listed  # before (QA 40): the local model, as in this shell
    # Nor is a choice checked against this shell's settings: the services have no reranker URL.
    assert await asyncio.to_thread(main, ["plugins", "use", "--org", plugin_org.slug, "reranker", "http"]) == 1
    assert "is not configured" in capsys.readouterr().err
    assert await asyncio.to_thread(main, ["plugins", "use", "--org", plugin_org.slug, "reranker", "reverse"]) == 0
    assert "note: CORTEX_PLUGIN_RERANKER=none pins the running services" in capsys.readouterr().out
    assert os.environ["CORTEX_PLUGIN_RERANKER"] == "reverse"  # the shell's own, back after the command


async def test_the_cli_lists_an_unhealthy_plugin_in_its_table_without_log_lines(
    migrated: Infrastructure, plugin_org: Org, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CORTEX_MEM0_URL", "http://127.0.0.1:9")  # nothing listens there

    done = await cli_process(migrated, tmp_path, ["plugins", "list", "--org", plugin_org.slug])

    assert done.returncode == 0, done.stderr
    assert "mem0" in done.stdout and "unhealthy: mem0 at http://127.0.0.1:9" in done.stdout
    assert done.stderr == ""  # before: the service's WARNING about the failed call, above the table


async def switch_space(database_url: str, model: str, dimension: int) -> None:
    engine = make_engine(database_url, pool_size=1)
    try:
        async with engine.begin() as connection:
            switch = text("SELECT cortex_switch_embedding_space(:m, :d)")
            await connection.execute(switch, {"m": model, "d": dimension})
    finally:
        await engine.dispose()


async def test_the_embedder_entry_says_search_is_lexical_only_when_the_index_holds_another_model(
    migrated: Infrastructure, capsys: pytest.CaptureFixture[str]
) -> None:
    """QA 34: the listing said the embedder was ok while every search ran without its dense leg."""
    async with own_database(migrated.database_url, "cx_space") as name:
        database_url = on_database(migrated.database_url, name)
        org_id = uuid.uuid4()

        view = await list_plugins(database_url, org_id, PluginRegistry())
        fitting = next(category for category in view.categories if category.category == "embedder")
        assert (fitting.active, fitting.index_space, fitting.detail) == (
            "local",
            "all-MiniLM-L6-v2 (dimension 384)",
            None,
        )

        await switch_space(database_url, "nomic-embed-text", 768)
        view = await list_plugins(database_url, org_id, PluginRegistry())
        embedder = next(category for category in view.categories if category.category == "embedder")
        assert embedder.index_space == "nomic-embed-text (dimension 768)"
        assert embedder.detail == (
            "the index holds embeddings of nomic-embed-text (dimension 768), not of all-MiniLM-L6-v2: search and "
            "recall are lexical-only until the indexer runs with all-MiniLM-L6-v2 (it re-embeds everything when "
            "it starts on a new model)"
        )
        assert by_name(embedder.model_dump(by_alias=True))["local"]["health"] == "ok"  # healthy all the same
        print(render(view))
        assert "embedder: local [default] — the index holds embeddings of nomic-embed-text" in capsys.readouterr().out


async def test_the_gateway_lists_the_space_the_index_is_in(migrated: Infrastructure, plugin_org: Org) -> None:
    recorded = await scalar(migrated.database_url, "SELECT model || '/' || dimension FROM embedding_space WHERE active")
    embedder = (await listing(plugin_org))["embedder"]
    shown = embedder.get("indexSpace")
    assert shown == (None if recorded is None else "{} (dimension {})".format(*recorded.split("/")))


async def test_an_embedder_answering_another_length_than_the_index_holds_is_unhealthy(
    migrated: Infrastructure, monkeypatch: pytest.MonkeyPatch
) -> None:
    """QA 47: the listing said ok while the indexer refused every answer of the endpoint, of another length."""
    server = FakeEmbeddingServer(dimension=32).start()
    monkeypatch.setenv("CORTEX_EMBEDDER_OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("CORTEX_EMBEDDER_OPENAI_MODEL", "fake-a")
    try:
        async with own_database(migrated.database_url, "cx_space_length") as name:
            database_url = on_database(migrated.database_url, name)
            await switch_space(database_url, "fake-a", 48)

            view = await list_plugins(database_url, uuid.uuid4(), PluginRegistry())
    finally:
        server.stop()
    embedder = next(category for category in view.categories if category.category == "embedder")
    openai = by_name(embedder.model_dump(by_alias=True))["openai"]
    assert (openai["health"], openai["healthDetail"]) == ("unhealthy", "a vector of length 32, expected 48")
