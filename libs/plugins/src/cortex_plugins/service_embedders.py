"""`CORTEX_INDEXER_EMBEDDER` and `CORTEX_AGGREGATOR_EMBEDDER`: without a `CORTEX_PLUGIN_EMBEDDER` pin, the
indexer and the aggregator each choose their embedder by their own setting (`local`, `openai` or `none`).
The plugin listing reads them as those services do, so that it shows the embedder in use, not the default."""

from pydantic_settings import BaseSettings, SettingsConfigDict

from cortex_contracts.plugins import SelectionReason
from cortex_plugins.cascade import Selection

DEFAULT = "local"
NONE = "none"  # lexical-only


class ServiceEmbedders(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CORTEX_", env_file=".env", extra="ignore")

    # Plain strings: a value the services refuse (they do not start) is shown, not an error here.
    indexer_embedder: str = DEFAULT
    aggregator_embedder: str = DEFAULT


def chosen_by_settings() -> Selection | None:
    """The embedder the services' settings choose, when they choose other than the default."""
    settings = ServiceEmbedders()
    indexer = settings.indexer_embedder.strip() or DEFAULT
    aggregator = settings.aggregator_embedder.strip() or DEFAULT
    if indexer == aggregator == DEFAULT:
        return None
    if indexer == aggregator:
        detail = f"CORTEX_INDEXER_EMBEDDER and CORTEX_AGGREGATOR_EMBEDDER are {indexer!r}"
    else:
        detail = (
            f"CORTEX_INDEXER_EMBEDDER is {indexer!r} (documents), CORTEX_AGGREGATOR_EMBEDDER {aggregator!r} "
            "(queries): search is lexical-only wherever the query model is not the index's"
        )
    if indexer == NONE:
        detail += "; the indexer embeds nothing: documents are indexed lexical-only"
    return Selection(None if indexer == NONE else indexer, SelectionReason.ENV, (detail,))
