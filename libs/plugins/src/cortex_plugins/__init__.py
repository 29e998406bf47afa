"""The plugin runtime: entry-point categories, lazy loading with error capture, and the selection cascade.

A plugin is an entry point in the group `cortex.<category>` whose object is a zero-argument factory
(`create()`) returning the plugin, or — as the extractors register theirs — the plugin object itself.
A plugin has a `name` and may have `async def health(self) -> str | None` (None = healthy).
"""

from cortex_plugins.cascade import Candidate, Selection, select
from cortex_plugins.categories import CATEGORIES, Category, category, env_var
from cortex_plugins.errors import PluginChoiceError, PluginUnavailable
from cortex_plugins.loading import LoadedPlugin
from cortex_plugins.registry import PluginRegistry
from cortex_plugins.settings import PluginSettings

__all__ = [
    "CATEGORIES",
    "Candidate",
    "Category",
    "LoadedPlugin",
    "PluginChoiceError",
    "PluginRegistry",
    "PluginSettings",
    "PluginUnavailable",
    "Selection",
    "category",
    "env_var",
    "select",
]
