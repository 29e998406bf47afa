"""`PluginRegistry`: what a service builds in its composition root. Discovery and loading are lazy.

Nothing happens at construction. A category's entry points are found on first use, and each plugin is
loaded (import and factory call, which may block: call `load_all` off the event loop) when first needed:
by the selection cascade as it reaches it, or by a listing. Both are kept for the process.
"""

import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from dotenv import dotenv_values

from cortex_plugins import discovery
from cortex_plugins.cascade import Selection, not_installed, select
from cortex_plugins.categories import CATEGORIES, Category, category, env_var
from cortex_plugins.discovery import EntryPointLike
from cortex_plugins.errors import PluginChoiceError, PluginUnavailable
from cortex_plugins.loading import LoadedPlugin, duplicate, load_plugin
from cortex_plugins.settings import PluginSettings, unknown_pin_variables

log = logging.getLogger(__name__)

Finder = Callable[[str], Sequence[EntryPointLike]]


class PluginRegistry:
    def __init__(
        self, *, pins: Mapping[str, str] | None = None, find: Finder | None = None, unknown: Sequence[str] = ()
    ) -> None:
        """`pins`: category → plugin name, the environment's pins (`from_environment` reads them); `unknown`:
        the environment's `CORTEX_PLUGIN_*` variables that name no category."""
        self._pins = dict(pins or {})
        self._unknown = list(unknown)
        self._find = find
        self._found: dict[str, tuple[EntryPointLike, ...]] = {}
        self._loaded: dict[str, dict[str, LoadedPlugin]] = {}
        self._lock = threading.Lock()
        self._sessions: object | None = None

    @classmethod
    def from_environment(cls) -> "PluginRegistry":
        """The registry a service builds at start-up: pins from CORTEX_PLUGIN_<CATEGORY>, real entry points."""
        pins = PluginSettings().pins()
        if "extractor" in pins:
            log.warning("%s is ignored: every extractor is used for its media types", env_var("extractor"))
        return cls(pins=pins, unknown=unknown_pin_variables([*dotenv_values(".env"), *os.environ]))

    @property
    def categories(self) -> tuple[Category, ...]:
        return CATEGORIES

    def plugins(self, category_name: str) -> tuple[LoadedPlugin, ...]:
        """Every installed plugin of the category, loaded (or with its load error), by name. A name registered
        twice is listed twice: the second entry as a duplicate, never loaded."""
        kept: dict[str, LoadedPlugin] = {}
        duplicates: list[LoadedPlugin] = []
        for entry in self._entries(category_name):
            if entry.name in kept:
                duplicates.append(duplicate(category_name, entry, kept[entry.name]))
            else:
                kept[entry.name] = self._named(category_name, entry.name)
        return tuple(sorted([*kept.values(), *duplicates], key=lambda p: p.name))

    def use_database(self, sessions: object) -> None:
        """Hand the service's `async_sessionmaker` to every plugin that keeps its data in Cortex's own
        PostgreSQL — by convention, one with a `bind(sessions)` method (pgvector) — loaded now or later."""
        with self._lock:
            self._sessions = sessions
            for plugins in self._loaded.values():
                plugins.update({name: self._bind(p) for name, p in plugins.items()})

    def load_all(self) -> None:
        for each in CATEGORIES:
            self.plugins(each.name)

    def pin(self, category_name: str) -> str | None:
        return self._pins.get(category_name)

    def naming_refusals(self) -> list[str]:
        """The refusals seen without loading a plugin: `CORTEX_PLUGIN_*` variables that name no category, and
        pins that name no installed plugin (`cortex run` checks these before it starts anything)."""
        refusals = self._unknown_categories()
        for category_name, pin in sorted(self._pins.items()):
            installed = (entry.name for entry in self._entries(category_name))
            if category(category_name).selectable and (problem := not_installed(installed, pin)):
                refusals.append(f"{env_var(category_name)}={pin}: {category_name} plugin {problem}")
        return refusals

    def pin_refusals(self) -> list[str]:
        """Why pins cannot be honoured: a pin is an operator's order, so a service refuses to start on a plugin
        that is not installed, not configured or broken, rather than run on another (extractor pins are ignored)."""
        refusals = self._unknown_categories()
        for category_name in sorted(self._pins):
            if category(category_name).selectable:
                chosen = self.selection(category_name)
                if chosen.name is None:
                    refusals.append(chosen.detail or f"{env_var(category_name)} names no usable plugin")
        return refusals

    def _unknown_categories(self) -> list[str]:
        categories = ", ".join(each.name for each in CATEGORIES)
        return [f"{name} names no plugin category (categories: {categories})" for name in self._unknown]

    def selection(self, category_name: str, org_choice: str | None = None) -> Selection:
        """The cascade for this category with what is installed here (not for non-selectable categories)."""
        chosen = category(category_name)
        if not chosen.per_organization:
            org_choice = None  # deployment-wide: `check_choice` refuses to store one, an old one is ignored
        names = dict.fromkeys(entry.name for entry in self._entries(category_name))
        return select(
            category_name,
            [_Unloaded(self, category_name, name) for name in names],
            pin=self.pin(category_name),
            pin_source=env_var(category_name),
            org_choice=org_choice,
            default=chosen.default,
        )

    def active(self, category_name: str, org_choice: str | None = None) -> object:
        """The plugin to use; raises `PluginUnavailable` with the reason when there is none."""
        if not category(category_name).selectable:
            raise PluginChoiceError(f"{category_name} plugins are not chosen: each is used for its media types")
        chosen = self.selection(category_name, org_choice)
        if chosen.name is None:
            raise PluginUnavailable(f"no usable {category_name} plugin: {chosen.detail}")
        plugin = self._named(category_name, chosen.name).plugin
        assert plugin is not None
        return plugin

    def check_choice(self, category_name: str, plugin_name: str) -> None:
        """Raise `PluginChoiceError` unless an organization may choose this plugin for this category."""
        chosen = category(category_name)
        if not chosen.selectable:
            raise PluginChoiceError(
                f"{category_name} plugins are not chosen: every loaded one is used for its media types"
            )
        if not chosen.per_organization:
            raise PluginChoiceError(
                f"{category_name} is chosen for the whole deployment (one embedding space and vector index per "
                f"database): set {env_var(category_name)} for every service instead"
            )
        names = {entry.name for entry in self._entries(category_name)}
        if plugin_name not in names:
            installed = ", ".join(sorted(names)) or "none"
            raise PluginChoiceError(f"no {category_name} plugin named {plugin_name!r}; installed: {installed}")
        found = self._named(category_name, plugin_name)
        if not found.loaded:
            why = "failed to load" if found.configured else "is not configured"
            raise PluginChoiceError(f"{category_name} plugin {plugin_name!r} {why}: {found.error}")

    def _entries(self, category_name: str) -> tuple[EntryPointLike, ...]:
        """The category's entry points, found once; nothing they point at is imported."""
        group = category(category_name).group
        with self._lock:
            if category_name not in self._found:
                self._found[category_name] = tuple((self._find or discovery.find_entry_points)(group))
            return self._found[category_name]

    def _named(self, category_name: str, name: str) -> LoadedPlugin:
        """The plugin first registered under `name` (which must be installed), loaded on first use: a service
        imports only what its cascade reaches (the `qdrant` store's client alone takes about a second)."""
        entry = next(entry for entry in self._entries(category_name) if entry.name == name)
        with self._lock:
            loaded = self._loaded.setdefault(category_name, {})
            if name not in loaded:
                loaded[name] = self._bind(load_plugin(category_name, entry, category(category_name).methods))
            return loaded[name]

    def _bind(self, loaded: LoadedPlugin) -> LoadedPlugin:
        bind = getattr(loaded.plugin, "bind", None)
        if self._sessions is None or bind is None:
            return loaded
        try:
            bind(self._sessions)
        except Exception as exc:
            log.warning("%s plugin %r: bind(sessions) raised", loaded.category, loaded.name, exc_info=True)
            return replace(loaded, plugin=None, error=f"bind(sessions) failed: {type(exc).__name__}: {exc}")
        return loaded


class _Unloaded:
    """A candidate of the cascade, loaded only when the cascade asks whether it can be used."""

    def __init__(self, registry: PluginRegistry, category_name: str, name: str) -> None:
        self.name = name
        self._registry, self._category = registry, category_name

    def _load(self) -> LoadedPlugin:
        return self._registry._named(self._category, self.name)

    @property
    def loaded(self) -> bool:
        return self._load().loaded

    @property
    def error(self) -> str | None:
        return self._load().error

    @property
    def configured(self) -> bool:
        return self._load().configured
