"""The environment pins, `CORTEX_PLUGIN_<CATEGORY>=name`: read once, by the composition root."""

from collections.abc import Iterable, Mapping

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from cortex_plugins.categories import CATEGORIES, ENV_PREFIX, env_var

PIN = "Pins the category to this plugin for every organization (overrides `cortex plugins use`)."


class PluginSettings(BaseSettings):
    model_config = SettingsConfigDict(allow_inf_nan=False, env_prefix="CORTEX_PLUGIN_", env_file=".env", extra="ignore")

    extractor: str | None = Field(default=None, description="Ignored: every extractor is used for its media types.")
    chunker: str | None = Field(default=None, description=PIN)
    embedder: str | None = Field(default=None, description=PIN)
    vector_store: str | None = Field(default=None, description=PIN)
    reranker: str | None = Field(default=None, description=PIN)
    rag: str | None = Field(default=None, description=PIN)
    memory: str | None = Field(default=None, description=PIN)
    summarizer: str | None = Field(default=None, description=PIN)

    def pins(self) -> dict[str, str]:
        """Category → pinned plugin name, for the categories that are pinned."""
        return {category: name.strip() for category, name in self.model_dump().items() if name and name.strip()}


def unknown_pin_variables(variables: Iterable[str]) -> list[str]:
    """`CORTEX_PLUGIN_*` variables that name no category: a misspelt pin (`CORTEX_PLUGIN_RERANKR`) pins nothing."""
    known = {env_var(each.name) for each in CATEGORIES}
    return sorted({name for name in variables if name.upper().startswith(ENV_PREFIX) and name.upper() not in known})


def pins_in(variables: Mapping[str, str]) -> dict[str, str]:
    """The pins these variables set, read as `PluginSettings` reads the environment (names in any case,
    values stripped): for a process that checks another's environment before starting it."""
    values = {name.upper(): value.strip() for name, value in variables.items()}
    return {each.name: values[env_var(each.name)] for each in CATEGORIES if values.get(env_var(each.name))}
