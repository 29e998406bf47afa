"""The registry: lazy discovery, loading with error capture, the cascade over what loaded, choice checks."""

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path

import pytest
from pydantic_settings import BaseSettings, SettingsConfigDict

from cortex_contracts.plugins import HealthStatus, PluginNotConfigured, PluginSettingsInvalid, SelectionReason
from cortex_plugins import PluginChoiceError, PluginRegistry, PluginUnavailable
from cortex_plugins.discovery import EntryPointLike
from cortex_plugins.listing import check_health, plugins_view
from cortex_plugins.settings import PluginSettings
from cortex_plugins.testing import FakeEntryPoint


class AnyPlugin:
    """Has what the services call on a plugin of each category these tests use."""

    def upsert(self) -> None: ...

    def search(self) -> None: ...

    def rerank(self) -> None: ...

    def extract(self) -> None: ...

    def embed(self) -> None: ...


class Store(AnyPlugin):
    def __init__(self, name: str) -> None:
        self.name = name


def pgvector_factory() -> Store:
    return Store("pgvector")


def raising_factory() -> Store:
    raise ValueError("CORTEX_QDRANT_URL is not a URL")


class Instance(AnyPlugin):  # registered as the object itself, the way the extractors register theirs
    name = "instance"

    def __call__(self) -> None:
        raise AssertionError("an instance is the plugin; it is never called as a factory")


GROUPS: dict[str, list[FakeEntryPoint]] = {
    "cortex.vector_store": [
        FakeEntryPoint("qdrant", "fake_qdrant:create", raising_factory),
        FakeEntryPoint("pgvector", "fake_pgvector:create", pgvector_factory),
        FakeEntryPoint("missing", "not_installed:create", ModuleNotFoundError("No module named 'not_installed'")),
        FakeEntryPoint("instance", "fake_instance:plugin", Instance()),
        FakeEntryPoint("pgvector", "another_pgvector:create", pgvector_factory),
    ],
}
GROUPS["cortex.reranker"] = GROUPS["cortex.vector_store"]  # the same plugins in a per-organization category


class Finder:
    def __init__(self) -> None:
        self.asked: list[str] = []

    def __call__(self, group: str) -> Sequence[EntryPointLike]:
        self.asked.append(group)
        return GROUPS.get(group, [])


def test_nothing_is_discovered_until_used_then_each_group_once() -> None:
    finder = Finder()
    registry = PluginRegistry(find=finder, pins={})
    assert finder.asked == []
    registry.plugins("vector_store")
    registry.plugins("vector_store")
    assert finder.asked == ["cortex.vector_store"]


def test_load_errors_are_captured_and_the_others_load() -> None:
    plugins = {(p.name, p.target): p for p in PluginRegistry(find=Finder(), pins={}).plugins("vector_store")}
    assert plugins["qdrant", "fake_qdrant:create"].error == (
        "fake_qdrant:create() failed: ValueError: CORTEX_QDRANT_URL is not a URL"
    )
    assert plugins["missing", "not_installed:create"].error == (
        "import failed: ModuleNotFoundError: No module named 'not_installed'"
    )
    loaded = plugins["pgvector", "fake_pgvector:create"]
    assert loaded.loaded
    assert isinstance(loaded.plugin, Store)
    assert isinstance(plugins["instance", "fake_instance:plugin"].plugin, Instance)
    assert plugins["pgvector", "another_pgvector:create"].error == (
        "the name 'pgvector' is already registered by fake_pgvector:create"
    )


def test_the_default_is_used_and_a_duplicate_name_does_not_shadow_it() -> None:
    registry = PluginRegistry(find=Finder(), pins={})
    selection = registry.selection("vector_store")
    assert (selection.name, selection.reason) == ("pgvector", SelectionReason.DEFAULT)
    active = registry.active("vector_store")
    assert isinstance(active, Store)
    assert active.name == "pgvector"


def test_the_pin_beats_the_org_choice() -> None:
    registry = PluginRegistry(find=Finder(), pins={"reranker": "instance"})
    assert registry.selection("reranker", org_choice="pgvector").reason is SelectionReason.ENV
    assert isinstance(registry.active("reranker", org_choice="pgvector"), Instance)


def test_the_org_choice_beats_the_default_where_organizations_may_choose() -> None:
    registry = PluginRegistry(find=Finder(), pins={})
    assert registry.selection("reranker", org_choice="instance").reason is SelectionReason.ORG
    assert isinstance(registry.active("reranker", org_choice="instance"), Instance)


def test_deployment_wide_categories_ignore_an_org_choice_and_refuse_to_store_one() -> None:
    registry = PluginRegistry(find=Finder(), pins={})
    assert registry.selection("vector_store", org_choice="instance").reason is SelectionReason.DEFAULT
    with pytest.raises(PluginChoiceError, match=r"whole deployment .* set CORTEX_PLUGIN_VECTOR_STORE"):
        registry.check_choice("vector_store", "pgvector")


def test_a_pin_to_a_broken_plugin_makes_the_category_unavailable_with_the_reason() -> None:
    registry = PluginRegistry(find=Finder(), pins={"vector_store": "qdrant"})
    with pytest.raises(PluginUnavailable, match=r"CORTEX_PLUGIN_VECTOR_STORE=qdrant: vector_store plugin 'qdrant'"):
        registry.active("vector_store")


def test_pins_a_service_cannot_honour_are_its_refusals_and_a_usable_or_extractor_pin_is_none() -> None:
    pins = {"vector_store": "qdrant", "reranker": "pg", "extractor": "anything"}
    refusals = PluginRegistry(find=Finder(), pins=pins).pin_refusals()

    assert refusals == [
        "CORTEX_PLUGIN_RERANKER=pg: reranker plugin 'pg' is not installed (installed: instance, missing, "
        "pgvector, qdrant)",
        "CORTEX_PLUGIN_VECTOR_STORE=qdrant: vector_store plugin 'qdrant' failed to load: fake_qdrant:create() "
        "failed: ValueError: CORTEX_QDRANT_URL is not a URL",
    ]
    assert PluginRegistry(find=Finder(), pins={"vector_store": "pgvector"}).pin_refusals() == []


def test_check_choice_refuses_unknown_categories_and_plugins_with_what_exists() -> None:
    registry = PluginRegistry(find=Finder(), pins={})
    registry.check_choice("reranker", "pgvector")
    with pytest.raises(PluginChoiceError, match=r"unknown plugin category 'rerank'; categories: extractor, "):
        registry.check_choice("rerank", "pgvector")
    with pytest.raises(PluginChoiceError, match=r"no reranker plugin named 'pg'; installed: instance, missing"):
        registry.check_choice("reranker", "pg")
    with pytest.raises(PluginChoiceError, match=r"'qdrant' failed to load: .*CORTEX_QDRANT_URL"):
        registry.check_choice("reranker", "qdrant")
    with pytest.raises(PluginChoiceError, match=r"extractor plugins are not chosen"):
        registry.check_choice("extractor", "markdown")


def unconfigured_factory() -> Store:
    raise PluginNotConfigured("CORTEX_MEM0_URL is not set")


async def test_a_plugin_nobody_configured_is_listed_as_such_and_passed_over_quietly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    groups = {
        "cortex.memory": [
            FakeEntryPoint("mem0", "mem0:create", unconfigured_factory),
            FakeEntryPoint("postgres", "postgres:create", pgvector_factory),
        ]
    }
    registry = PluginRegistry(find=lambda group: groups.get(group, []), pins={})
    with caplog.at_level(logging.INFO, logger="cortex_plugins"):
        view = await plugins_view(registry, {"memory": "mem0"})

    memory = next(c for c in view.categories if c.category == "memory")
    mem0 = next(p for p in memory.plugins if p.name == "mem0")
    assert (mem0.loaded, mem0.health, mem0.error) == (False, HealthStatus.NOT_CONFIGURED, "CORTEX_MEM0_URL is not set")
    assert (memory.active, memory.reason) == ("postgres", SelectionReason.DEFAULT)
    assert memory.detail == "the organization's choice 'mem0' is not configured: CORTEX_MEM0_URL is not set"
    assert [(r.levelname, r.exc_info) for r in caplog.records] == [("INFO", None)]  # no warning, no traceback
    with pytest.raises(PluginChoiceError, match=r"memory plugin 'mem0' is not configured: CORTEX_MEM0_URL is not set"):
        registry.check_choice("memory", "mem0")


class Healthy(AnyPlugin):
    name = "healthy"

    async def health(self) -> str | None:
        return None


class Down(AnyPlugin):
    name = "down"

    async def health(self) -> str | None:
        return "connection refused"


class Slow(AnyPlugin):
    name = "slow"

    async def health(self) -> str | None:
        await asyncio.sleep(10)
        return None


class Crashing(AnyPlugin):
    name = "crashing"

    async def health(self) -> str | None:
        raise RuntimeError("boom")


async def test_health_is_none_when_healthy_or_unreported_else_the_reason() -> None:
    assert await check_health(Healthy()) is None
    assert await check_health(Store("no health method")) is None
    assert await check_health(Down()) == "connection refused"
    assert await check_health(Slow(), timeout=0.05) == "health check timed out after 0.05 s"
    assert await check_health(Crashing()) == "health check failed: RuntimeError: boom"


async def test_the_view_lists_every_category_with_load_errors_health_and_the_choice() -> None:
    groups: dict[str, list[FakeEntryPoint]] = {
        **GROUPS,
        "cortex.reranker": [FakeEntryPoint("none", "r:create", Healthy), FakeEntryPoint("down", "d:create", Down)],
        "cortex.extractor": [FakeEntryPoint("csv", "csv:extractor", Instance())],
    }
    registry = PluginRegistry(find=lambda group: groups.get(group, []), pins={})
    view = await plugins_view(registry, {"reranker": "down"})
    by_category = {c.category: c for c in view.categories}
    assert list(by_category) == [
        "extractor",
        "chunker",
        "embedder",
        "vector_store",
        "reranker",
        "rag",
        "memory",
        "summarizer",
    ]
    reranker = by_category["reranker"]
    assert (reranker.active, reranker.reason, reranker.org_choice) == ("down", SelectionReason.ORG, "down")
    health = {p.name: (p.default, p.health, p.health_detail) for p in reranker.plugins}
    assert health == {
        "none": (True, HealthStatus.OK, None),
        "down": (False, HealthStatus.UNHEALTHY, "connection refused"),
    }
    stores = by_category["vector_store"]
    assert (stores.active, stores.reason) == ("pgvector", SelectionReason.DEFAULT)
    qdrant = next(p for p in stores.plugins if p.name == "qdrant")
    assert (qdrant.loaded, qdrant.health) == (False, HealthStatus.NOT_LOADED)
    assert qdrant.error is not None
    assert "CORTEX_QDRANT_URL" in qdrant.error
    extractor = by_category["extractor"]
    assert (extractor.active, extractor.reason) == (None, SelectionReason.MEDIA_TYPE)
    chunker = by_category["chunker"]
    assert (chunker.active, chunker.reason, chunker.detail) == (
        None,
        SelectionReason.NONE,
        "the default 'heading-paragraph' is not installed (installed: none); no chunker plugin is installed",
    )


def test_a_plugin_variable_that_names_no_category_is_a_refusal(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("CORTEX_PLUGIN_RERANKR", "http")
    monkeypatch.setenv("cortex_plugin_nosuchcat", "x")
    monkeypatch.setenv("CORTEX_PLUGIN_EXTRACTOR", "pdf")
    monkeypatch.setenv("CORTEX_PLUGIN_VECTOR_STORE", "pgvector")

    registry = PluginRegistry.from_environment()

    categories = "extractor, chunker, embedder, vector_store, reranker, rag, memory, summarizer"
    assert [refusal for refusal in registry.pin_refusals() if "names no plugin category" in refusal] == [
        f"CORTEX_PLUGIN_RERANKR names no plugin category (categories: {categories})",
        f"cortex_plugin_nosuchcat names no plugin category (categories: {categories})",
    ]
    assert "CORTEX_PLUGIN_EXTRACTOR is ignored: every extractor is used for its media types" in caplog.text


def test_pins_come_from_cortex_plugin_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CORTEX_PLUGIN_VECTOR_STORE", " instance ")
    monkeypatch.setenv("CORTEX_PLUGIN_RERANKER", "")
    assert PluginSettings().pins() == {"vector_store": "instance"}
    registry = PluginRegistry.from_environment()
    assert registry.pin("vector_store") == "instance"
    assert registry.pin("reranker") is None


class KeepsDataInPostgres(AnyPlugin):
    name = "in-postgres"

    def __init__(self) -> None:
        self.sessions: object | None = None

    def bind(self, sessions: object) -> None:
        if sessions == "refused":
            raise ConnectionError("no database")
        self.sessions = sessions


def test_the_database_is_handed_to_plugins_that_bind_it_before_or_after_they_load() -> None:
    groups = {"cortex.vector_store": [FakeEntryPoint("in-postgres", "p:create", KeepsDataInPostgres)]}
    early = PluginRegistry(pins={}, find=lambda group: groups.get(group, []))
    early.use_database("sessions")
    late = PluginRegistry(pins={}, find=lambda group: groups.get(group, []))
    late.plugins("vector_store")
    late.use_database("sessions")
    for registry in (early, late):
        store = registry.active("vector_store")
        assert isinstance(store, KeepsDataInPostgres)
        assert store.sessions == "sessions"

    refused = PluginRegistry(pins={}, find=lambda group: groups.get(group, []))
    refused.use_database("refused")
    (loaded,) = refused.plugins("vector_store")
    assert loaded.error == "bind(sessions) failed: ConnectionError: no database"


def test_a_factory_that_gives_none_is_a_plugin_that_did_not_load() -> None:
    """Before: listed as loaded and `ok`, and `cortex plugins use` accepted it."""
    groups = {"cortex.reranker": [FakeEntryPoint("hollow", "hollow:create", lambda: None)]}
    registry = PluginRegistry(pins={}, find=lambda group: groups.get(group, []))

    (hollow,) = registry.plugins("reranker")

    assert (hollow.loaded, hollow.error) == (False, "hollow:create gave no plugin (None)")
    with pytest.raises(PluginChoiceError, match="hollow"):
        registry.check_choice("reranker", "hollow")


def test_a_misspelt_pin_in_the_env_file_is_a_refusal_too(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The services read `.env` as well as the environment: a typo there pinned nothing as silently."""
    (tmp_path / ".env").write_text("CORTEX_PLUGIN_VECTORSTORE=qdrant\n")
    monkeypatch.chdir(tmp_path)

    refusals = PluginRegistry.from_environment().pin_refusals()

    assert [refusal.split(" (")[0] for refusal in refusals] == ["CORTEX_PLUGIN_VECTORSTORE names no plugin category"]


def test_a_plugin_without_its_categorys_methods_did_not_load() -> None:
    """Before: a factory that gave, say, a string was listed as loaded and `ok`, then failed at its first call."""
    groups = {"cortex.reranker": [FakeEntryPoint("text", "text:create", lambda: "a reranker")]}
    registry = PluginRegistry(pins={}, find=lambda group: groups.get(group, []))

    (text,) = registry.plugins("reranker")

    assert (text.loaded, text.error) == (False, "text:create gave str, which has no rerank()")
    with pytest.raises(PluginChoiceError, match="has no rerank"):
        registry.check_choice("reranker", "text")


class Counted:
    """An entry point that counts its loads."""

    def __init__(self, name: str) -> None:
        self.name, self.value, self.loads = name, f"{name}:create", 0

    def load(self) -> object:
        self.loads += 1
        return pgvector_factory


def test_choosing_a_plugin_loads_only_the_plugins_the_cascade_reaches() -> None:
    """A service imports the plugins it uses: before, every installed one (the qdrant client: ~1 s of CPU)."""
    entries = {name: Counted(name) for name in ("pgvector", "qdrant", "milvus")}

    def loads() -> dict[str, int]:
        return {name: entry.loads for name, entry in entries.items()}

    registry = PluginRegistry(pins={}, find=lambda group: list(entries.values()))
    registry.active("vector_store")
    assert loads() == {"pgvector": 1, "qdrant": 0, "milvus": 0}
    registry.active("reranker", org_choice="milvus")
    assert loads() == {"pgvector": 1, "qdrant": 0, "milvus": 1}

    PluginRegistry(pins={"vector_store": "qdrant"}, find=lambda group: list(entries.values())).pin_refusals()
    assert loads() == {"pgvector": 1, "qdrant": 1, "milvus": 1}

    registry.plugins("vector_store")  # a listing loads every one, once
    registry.plugins("vector_store")
    assert loads() == {"pgvector": 1, "qdrant": 2, "milvus": 2}


@pytest.mark.parametrize(
    ("indexer", "aggregator", "active", "detail"),
    [
        ("none", "none", None, "CORTEX_INDEXER_EMBEDDER and CORTEX_AGGREGATOR_EMBEDDER are 'none'; the indexer"),
        ("openai", "openai", "openai", "CORTEX_INDEXER_EMBEDDER and CORTEX_AGGREGATOR_EMBEDDER are 'openai'"),
        ("openai", "local", "openai", "CORTEX_INDEXER_EMBEDDER is 'openai' (documents), CORTEX_AGGREGATOR_EMBEDDER"),
    ],
)
async def test_the_embedder_shown_is_the_one_the_services_settings_choose(
    monkeypatch: pytest.MonkeyPatch, indexer: str, aggregator: str, active: str | None, detail: str
) -> None:
    monkeypatch.setenv("CORTEX_INDEXER_EMBEDDER", indexer)
    monkeypatch.setenv("CORTEX_AGGREGATOR_EMBEDDER", aggregator)
    groups = {
        "cortex.embedder": [FakeEntryPoint("local", "l:e", Instance()), FakeEntryPoint("openai", "o:e", Instance())]
    }
    registry = PluginRegistry(find=lambda group: groups.get(group, []), pins={})

    embedder = next(c for c in (await plugins_view(registry, {})).categories if c.category == "embedder")

    # Before: "local" by default, whatever the services embedded with (QA 34 B4).
    assert (embedder.active, embedder.reason) == (active, SelectionReason.ENV)
    assert embedder.detail is not None and embedder.detail.startswith(detail)

    pinned = PluginRegistry(find=lambda group: groups.get(group, []), pins={"embedder": "local"})  # a pin wins
    embedder = next(c for c in (await plugins_view(pinned, {})).categories if c.category == "embedder")
    assert (embedder.active, embedder.env_pin) == ("local", "local")


def invalid_settings_factory() -> Store:
    raise PluginSettingsInvalid("not valid: CORTEX_QDRANT_TIMEOUT_SECONDS (Input should be a valid integer)")


def test_a_plugin_whose_settings_are_not_valid_is_reported_in_one_line(caplog: pytest.LogCaptureFixture) -> None:
    groups = {"cortex.vector_store": [FakeEntryPoint("qdrant", "fake_qdrant:create", invalid_settings_factory)]}
    registry = PluginRegistry(find=lambda group: groups.get(group, []), pins={"vector_store": "qdrant"})
    with caplog.at_level(logging.INFO, logger="cortex_plugins"):
        (qdrant,) = registry.plugins("vector_store")
    assert qdrant.error == (
        "fake_qdrant:create() failed: not valid: CORTEX_QDRANT_TIMEOUT_SECONDS (Input should be a valid integer)"
    )
    # Before: two chained tracebacks (~25 lines) above the one line that said which setting.
    assert [(r.levelname, r.exc_info) for r in caplog.records] == [("WARNING", None)]


def test_a_plugin_whose_settings_model_refuses_a_value_is_reported_in_one_line(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    class StoreSettings(BaseSettings):
        model_config = SettingsConfigDict(env_prefix="CORTEX_FAKE_STORE_")
        timeout_seconds: int = 10

    def create() -> Store:
        StoreSettings()
        return Store("fake")

    monkeypatch.setenv("CORTEX_FAKE_STORE_TIMEOUT_SECONDS", "soon")
    groups = {"cortex.vector_store": [FakeEntryPoint("fake", "fake_store:create", create)]}
    with caplog.at_level(logging.INFO, logger="cortex_plugins"):
        (fake,) = PluginRegistry(find=lambda group: groups.get(group, []), pins={}).plugins("vector_store")
    assert fake.error == (
        "fake_store:create() failed: StoreSettings not valid: timeout_seconds (Input should be a valid integer, "
        "unable to parse string as an integer)"
    )
    assert [(r.levelname, r.exc_info) for r in caplog.records] == [("WARNING", None)]
