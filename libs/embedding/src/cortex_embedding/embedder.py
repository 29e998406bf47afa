"""What an embedder is to the rest of Cortex."""

from typing import Protocol


class Embedder(Protocol):
    @property
    def name(self) -> str:
        """The embedder's name (its model's, unless it also has a `model`: see `model_name`)."""
        ...

    @property
    def dimension(self) -> int:
        """The length of every vector. May block the first time (an endpoint's is discovered by a call)."""
        ...

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Unit-length vectors, one per text. Blocking: call it off the event loop."""
        ...


class EmbedderPlugin(Embedder, Protocol):
    """An embedder as the plugin runtime loads it: it can also say whether it works right now."""

    async def health(self) -> str | None:
        """None when healthy, else why not (for `GET /api/memory/plugins` and the embedding backfill)."""
        ...


def model_name(embedder: Embedder) -> str:
    """What the index records as the model its vectors come from: `embedder.model` when the embedder has
    one (a plugin named `openai` serving `nomic-embed-text`), else `embedder.name`."""
    model = getattr(embedder, "model", None)
    return model if isinstance(model, str) and model else embedder.name
