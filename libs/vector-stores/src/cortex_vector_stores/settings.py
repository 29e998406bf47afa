"""Settings of each store, from the environment. Read by the stores' `create()`, never at import time."""

import os
from pathlib import Path

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from cortex_contracts.settings_values import INT32_MAX, HttpUrl
from cortex_store.models import EMBEDDING_DIM


class QdrantSettings(BaseSettings):
    """`CORTEX_QDRANT_*`. With no URL the embedded local mode keeps its files under `path`."""

    model_config = SettingsConfigDict(allow_inf_nan=False, env_prefix="CORTEX_QDRANT_", env_file=".env", extra="ignore")

    url: HttpUrl | None = Field(default=None, description="A Qdrant server, e.g. http://127.0.0.1:6333.")
    api_key: SecretStr | None = Field(default=None, description="The server's API key, if it wants one.")
    path: Path = Field(
        default_factory=lambda: Path(os.environ.get("CORTEX_DATA_DIR", ".cortex")) / "qdrant",
        description="Local mode's directory (used without a URL), by default `qdrant` in CORTEX_DATA_DIR (`.cortex`). "
        "Only one process can open it at a time.",
    )
    collection: str = Field(default="cortex_chunks", min_length=1, description="The collection of chunk vectors.")
    dimension: int = Field(default=EMBEDDING_DIM, ge=1, description="Length of the embedding vectors.")
    timeout_seconds: int = Field(default=10, ge=1, description="Per request, against a server.")
    fail_fast_seconds: float = Field(
        default=5.0,
        ge=0,
        description="After a request to the server fails, calls fail at once for this long instead of waiting out"
        " the timeout each (searches answer lexically, indexing defers its mirror); 0: every call tries the server.",
    )


class PgVectorSettings(BaseSettings):
    """`CORTEX_PGVECTOR_*`: how the dense leg searches `kb_chunks.embedding`."""

    model_config = SettingsConfigDict(
        allow_inf_nan=False, env_prefix="CORTEX_PGVECTOR_", env_file=".env", extra="ignore", populate_by_name=True
    )

    exact_scan_max_chunks: int = Field(
        default=20_000,
        ge=0,
        le=INT32_MAX,
        validation_alias=AliasChoices(
            "CORTEX_PGVECTOR_EXACT_SCAN_MAX_CHUNKS", "CORTEX_AGGREGATOR_EXACT_SCAN_MAX_CHUNKS", "exact_scan_max_chunks"
        ),
        description="Up to this many candidate chunks a search scans exactly; above it HNSW, exact when HNSW is short.",
    )
    hnsw_ef_search: int = Field(
        default=200, ge=1, le=1000, description="hnsw.ef_search floor (pgvector's max is 1000)."
    )
