"""The embedding space the index is in: the model and dimension its stored embeddings were made with
(`embedding_space`, one active row; none before anything was embedded)."""

from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

ACTIVE_SPACE = text("SELECT model, dimension FROM embedding_space WHERE active")


@dataclass(frozen=True)
class RecordedSpace:
    model: str
    dimension: int

    def __str__(self) -> str:
        return f"{self.model} (dimension {self.dimension})"


async def recorded_space(session: AsyncSession) -> RecordedSpace | None:
    row = (await session.execute(ACTIVE_SPACE)).first()
    return RecordedSpace(row.model, row.dimension) if row else None
