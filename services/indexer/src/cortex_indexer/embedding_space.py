"""The embedding space the index is in (model and dimension), and the indexer's part in keeping to it.

The index records one active space (table `embedding_space`, migration 0010). The indexer adopts its
own at start-up: when its model or dimension differs from the recorded one, the database function
`cortex_switch_embedding_space` records the new space and clears every stored embedding (altering the
vector columns when the dimension changes), and the backfill re-embeds. A re-embed job, not a broken
index: lexical search works throughout, and dense search covers what is re-embedded so far.

Every write of embeddings first checks, in its own transaction, that the active space is the writer's
(holding the switch's advisory lock shared, so a switch waits for the write and then clears it). A copy
still running an old model therefore writes lexical-only passages, never vectors of another model.

Why at start-up rather than a `cortex reembed` command: changing CORTEX_EMBEDDER_* and restarting the
indexer is the whole procedure, and the advisory lock makes concurrent start-ups safe. The cost: an
old-model copy that restarts would switch the index back, so roll a model change out to every copy.
"""

import asyncio
import logging
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cortex_embedding.batcher import BatchingEmbedder
from cortex_embedding.embedder import Embedder, model_name
from cortex_embedding.errors import EmbeddingError
from cortex_store.embedding_space import ACTIVE_SPACE, recorded_space

log = logging.getLogger(__name__)

DIMENSION_PROBE = "How long is a vector of this model?"

SWITCH = text("SELECT cortex_switch_embedding_space(:model, :dimension)")
SWITCH_LOCK_KEY = 0x63786573  # the switch function holds it exclusively (migration 0010)
# Taken first in a writing transaction, shared: a switch waits for the write, a write during a switch
# waits for it to commit. A statement of its own, so the next one reads after the wait.
SHARE_SWITCH_LOCK = text(f"SELECT pg_advisory_xact_lock_shared({SWITCH_LOCK_KEY})")


@dataclass
class EmbeddingSpace:
    """This copy's space: its model, its dimension once known, and whether the index is in it."""

    model: str
    dimension: int | None = None
    adopted: bool = False  # the index was switched to (or already was in) this space at start-up
    superseded: bool = False  # since then another copy switched it: this copy writes lexical-only

    @property
    def writable(self) -> bool:
        """Worth embedding for: the index is in this space, as far as this copy knows."""
        return self.adopted and not self.superseded

    @classmethod
    def of(cls, embedder: BatchingEmbedder) -> "EmbeddingSpace":
        inner = embedder.embedder
        # An endpoint's dimension may be unknown until it answers: read it without calling the endpoint.
        known = getattr(inner, "known_dimension", None) if hasattr(inner, "known_dimension") else inner.dimension
        return cls(model=model_name(inner), dimension=known if isinstance(known, int) else None)


async def holds(session: AsyncSession, space: EmbeddingSpace) -> bool:
    """True when `space` is the active one, so its embeddings may be written in this transaction.

    Call it before the transaction touches documents or chunks: the lock it takes must come first.
    When another copy has switched the index to another model, this copy stops embedding (it does not
    switch back: that copy is the newer configuration) and says so once.
    """
    await session.execute(SHARE_SWITCH_LOCK)
    row = (await session.execute(ACTIVE_SPACE)).first()
    if row is not None and row.model == space.model and row.dimension == space.dimension:
        return True
    superseded(space, f"{row.model if row else None} (dimension {row.dimension if row else None})")
    return False


def superseded(space: EmbeddingSpace, now_in: str = "another embedding space") -> None:
    """Another copy switched the index to its model: this copy writes lexical-only from now on (it does not
    switch back: that copy is the newer configuration), and says so once."""
    if space.adopted and not space.superseded:
        log.error(
            "the index is now in %s, not %s: this copy indexes lexical-only until it is restarted with that model",
            now_in,
            space.model,
        )
    space.superseded = True


async def adopt(sessions: async_sessionmaker[AsyncSession], embedder: BatchingEmbedder, space: EmbeddingSpace) -> bool:
    """Make the index's space this copy's. False when the dimension cannot be learnt yet (endpoint down).

    With no dimension configured, the index's own is this model's when the index records this model: an
    endpoint's answer does not switch the index to another dimension of the same model (QA 29: one wrong
    answer at start cleared every stored embedding). To change a model's dimension, configure it."""
    inner = embedder.embedder
    async with sessions() as session:
        recorded = await recorded_space(session)
    if space.dimension is None and recorded is not None and recorded.model == space.model:
        space.dimension = recorded.dimension
    if space.dimension is None:
        health = getattr(inner, "health", None)
        reason = await health() if health is not None else None
        if reason is not None:  # one quick probe, rather than a start-up held up by every retry
            log.warning("cannot learn the embedding dimension of %s yet: %s", space.model, reason)
            return False
        try:
            space.dimension = await asyncio.to_thread(lambda: inner.dimension)
        except EmbeddingError as exc:
            log.warning("cannot learn the embedding dimension of %s yet: %s", space.model, exc)
            return False
    switching = recorded is None or (recorded.model, recorded.dimension) != (space.model, space.dimension)
    if switching and (problem := await _answer_problem(inner, space.dimension)) is not None:
        log.warning(
            "the index stays in %s, not %s (dimension %d), until the embedder answers vectors of that length: %s",
            recorded,
            space.model,
            space.dimension,
            problem,
        )
        return False
    async with sessions() as session, session.begin():
        switched = bool(await session.scalar(SWITCH, {"model": space.model, "dimension": space.dimension}))
    if (expect := getattr(inner, "expect_dimension", None)) is not None:
        expect(space.dimension)  # an answer of another length is refused: indexed lexical-only, backfilled later
    space.adopted = True
    if switched:
        # On a fresh database too (the migrations record the default model): say what was there, not that
        # embeddings were cleared, which alarmed on a first start with another model (QA 34 D5).
        log.warning(
            "embedding model is now %s (dimension %d); the index was in %s: whatever it held of that model was "
            "cleared and is being re-embedded",
            space.model,
            space.dimension,
            recorded,
        )
    else:
        log.info("embedding with %s (dimension %d), as the index records", space.model, space.dimension)
    return True


async def _answer_problem(inner: Embedder, dimension: int) -> str | None:
    """Why the embedder's answers cannot fill an index of `dimension`, or None. Asked before a switch, which
    clears every stored embedding: before (QA 47), a mistyped dimension switched the index at start, every
    answer was then refused, and nothing was ever embedded again."""
    health = getattr(inner, "health", None)
    if health is not None and (reason := await health()) is not None:  # one quick request, without retries
        return str(reason)
    try:
        vector = (await asyncio.to_thread(inner.embed, [DIMENSION_PROBE]))[0]
    except EmbeddingError as exc:
        return str(exc)
    return None if len(vector) == dimension else f"it answers vectors of {len(vector)}"
