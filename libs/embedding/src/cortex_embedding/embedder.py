"""What an embedder is to the rest of Cortex."""

from typing import Protocol


class Embedder(Protocol):
    name: str
    dimension: int

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Unit-length vectors, one per text. Blocking: call it off the event loop."""
        ...
