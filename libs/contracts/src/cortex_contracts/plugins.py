"""The plugin listing (`GET /api/memory/plugins`, `cortex plugins list`): categories, plugins, health, choice."""

from enum import StrEnum

from pydantic import Field

from cortex_contracts.base import WireModel


class SelectionReason(StrEnum):
    """Which rung of the selection cascade chose the active plugin."""

    ENV = "env"  # CORTEX_PLUGIN_<CATEGORY> pins it
    ORG = "org"  # the organization's choice (`cortex plugins use`)
    DEFAULT = "default"  # the category's built-in default
    FIRST = "first"  # the first plugin, by name, that loaded
    MEDIA_TYPE = "media-type"  # extractors: every loaded one is used, each for its media types
    NONE = "none"  # nothing usable: see `detail`


class PluginNotConfigured(Exception):
    """What a plugin factory raises when a setting it cannot do without is not given (`mem0` without
    CORTEX_MEM0_URL): an optional plugin nobody set up, not a fault. The message names the settings."""


class PluginSettingsInvalid(Exception):
    """What a plugin factory raises when a setting is given but not valid: the operator's to fix, so the
    message names the setting and no traceback is logged."""


class HealthStatus(StrEnum):
    OK = "ok"  # loaded, and its `health()` (if it has one) reported nothing wrong
    UNHEALTHY = "unhealthy"  # loaded, but `health()` gave a reason (or failed, or timed out)
    NOT_CONFIGURED = "not-configured"  # its factory raised PluginNotConfigured: see `error` for the settings
    NOT_LOADED = "not-loaded"  # the plugin did not load: see `error`


class PluginStatus(WireModel):
    name: str = Field(description="The entry-point name, as `cortex plugins use` and CORTEX_PLUGIN_* take it.")
    target: str = Field(description="The entry point's `module:object`.")
    default: bool = Field(description="Whether this is the category's built-in default.")
    loaded: bool = Field(description="Whether it imported and its factory returned a plugin.")
    error: str | None = Field(default=None, description="Why it did not load (not configured: which settings).")
    health: HealthStatus = Field(description="ok, unhealthy, not-configured or not-loaded.")
    health_detail: str | None = Field(default=None, description="The reason it is unhealthy.")


class CategoryStatus(WireModel):
    category: str = Field(description="extractor, chunker, embedder, vector_store, reranker, rag, memory, summarizer.")
    group: str = Field(description="The Python entry-point group, `cortex.<category>`.")
    active: str | None = Field(default=None, description="The plugin in use for this organization, if one is.")
    reason: SelectionReason = Field(description="Why that one: env pin, org choice, default or first loaded.")
    detail: str | None = Field(
        default=None, description="Rungs of the cascade that were passed over, or why nothing is usable."
    )
    env_pin: str | None = Field(default=None, description="The CORTEX_PLUGIN_<CATEGORY> value, if set.")
    org_choice: str | None = Field(default=None, description="The organization's stored choice, if any.")
    index_space: str | None = Field(
        default=None,
        description=(
            "embedder only: the model and dimension the stored embeddings were made with (none before anything "
            "was embedded). When the active embedder's model is another, `detail` says search is lexical-only."
        ),
    )
    plugins: list[PluginStatus] = Field(description="Every installed plugin of the category, by name.")


class PluginsView(WireModel):
    categories: list[CategoryStatus] = Field(description="Every category, in a fixed order.")
