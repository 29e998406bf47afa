"""Load one entry point into a plugin, capturing whatever goes wrong instead of raising it."""

import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass

from pydantic import ValidationError

from cortex_contracts.plugins import PluginNotConfigured, PluginSettingsInvalid
from cortex_plugins.discovery import EntryPointLike

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoadedPlugin:
    category: str
    name: str
    target: str  # the entry point's `module:object`
    plugin: object | None  # None when it failed to load
    error: str | None = None
    configured: bool = True  # False: its factory raised PluginNotConfigured (`error` names the settings)

    @property
    def loaded(self) -> bool:
        return self.error is None


def _is_factory(obj: object) -> bool:
    """A function or class is called to make the plugin; anything else is the plugin itself."""
    return inspect.isfunction(obj) or inspect.ismethod(obj) or inspect.isclass(obj)


def _missing(plugin: object, methods: tuple[str, ...]) -> list[str]:
    return [name for name in methods if not callable(getattr(plugin, name, None))]


def load_plugin(category: str, entry: EntryPointLike, methods: tuple[str, ...] = ()) -> LoadedPlugin:
    """Import the entry point and call its factory. An import error, a raising factory, or a plugin without the
    category's `methods` is reported."""
    try:
        obj = entry.load()
    except Exception as exc:
        log.warning("%s plugin %r (%s) failed to import", category, entry.name, entry.value, exc_info=True)
        return LoadedPlugin(category, entry.name, entry.value, None, f"import failed: {type(exc).__name__}: {exc}")
    if _is_factory(obj):
        obj = _made(category, entry, obj)
        if isinstance(obj, LoadedPlugin):
            return obj
    if obj is None:  # else listed as loaded and healthy, and chosen, then failing at its first call
        log.warning("%s plugin %r: %s gave no plugin (None)", category, entry.name, entry.value)
        return LoadedPlugin(category, entry.name, entry.value, None, f"{entry.value} gave no plugin (None)")
    if missing := _missing(obj, methods):  # else listed as loaded, then failing at its first call
        error = f"{entry.value} gave {type(obj).__name__}, which has no {', '.join(f'{m}()' for m in missing)}"
        log.warning("%s plugin %r: %s", category, entry.name, error)
        return LoadedPlugin(category, entry.name, entry.value, None, error)
    return LoadedPlugin(category, entry.name, entry.value, obj)


def _settings_error(exc: ValidationError) -> str:
    """`Model: field (why); …`, without the input (it may be a secret)."""
    return f"{exc.title} not valid: " + "; ".join(f"{'.'.join(map(str, e['loc']))} ({e['msg']})" for e in exc.errors())


def _made(category: str, entry: EntryPointLike, factory: Callable[[], object]) -> object:
    """What the factory makes, or the failed plugin when it raises."""
    try:
        return factory()
    except PluginNotConfigured as exc:  # an optional plugin nobody set up: no traceback, no warning
        log.info("%s plugin %r is not configured: %s", category, entry.name, exc)
        return LoadedPlugin(category, entry.name, entry.value, None, str(exc), configured=False)
    except (PluginSettingsInvalid, ValidationError) as exc:  # a setting not valid: a traceback would bury which
        error = f"{entry.value}() failed: {_settings_error(exc) if isinstance(exc, ValidationError) else exc}"
        log.warning("%s plugin %r: %s", category, entry.name, error)
        return LoadedPlugin(category, entry.name, entry.value, None, error)
    except Exception as exc:
        log.warning("%s plugin %r: %s() raised", category, entry.name, entry.value, exc_info=True)
        return LoadedPlugin(
            category, entry.name, entry.value, None, f"{entry.value}() failed: {type(exc).__name__}: {exc}"
        )


def duplicate(category: str, entry: EntryPointLike, kept: LoadedPlugin) -> LoadedPlugin:
    """A second entry point under a name already taken: listed, never loaded."""
    return LoadedPlugin(
        category, entry.name, entry.value, None, f"the name {entry.name!r} is already registered by {kept.target}"
    )
