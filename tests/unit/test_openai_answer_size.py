"""An embeddings answer is read streamed and refused past the size its vectors need (QA 34, B7: a 300 MB
answer was read and parsed whole, and the indexer grew to 1.6 GB)."""

import pytest

from cortex_embedding.answer_size import MIN_ANSWER_BYTES
from cortex_embedding.errors import InvalidEmbeddingResponse
from tests.scripted_endpoint import ScriptedEndpoint, Vectors
from tests.unit.conftest import MakeEmbedder

OVERSIZED = 8 * MIN_ANSWER_BYTES


@pytest.mark.parametrize("declare_length", [True, False], ids=["content-length", "until-closed"])
def test_an_answer_larger_than_its_vectors_need_is_refused_and_not_retried(
    scripted: ScriptedEndpoint, make_embedder: MakeEmbedder, declare_length: bool
) -> None:
    scripted.script.append(Vectors(padding_bytes=OVERSIZED, declare_length=declare_length))
    with pytest.raises(InvalidEmbeddingResponse, match="more than its vectors need"):
        make_embedder(dimension=16).embed(["hello"])
    assert scripted.requests == 1


async def test_the_health_probe_refuses_an_oversized_answer(
    scripted: ScriptedEndpoint, make_embedder: MakeEmbedder
) -> None:
    scripted.script.append(Vectors(padding_bytes=OVERSIZED, declare_length=False))
    assert "more than its vectors need" in (await make_embedder().health() or "")


@pytest.mark.parametrize("dimension", [1536, None], ids=["configured", "not-yet-known"])
def test_a_full_batch_of_real_sized_pretty_printed_vectors_is_read(
    scripted: ScriptedEndpoint, make_embedder: MakeEmbedder, dimension: int | None
) -> None:
    """The limit leaves room for honest answers: 64 vectors of OpenAI's 1536 floats, each on a line of its own."""
    scripted.script.append(Vectors(dimension=1536, indent=2))
    vectors = make_embedder(dimension=dimension, max_batch=64).embed([f"text {i}" for i in range(64)])
    assert [len(vector) for vector in vectors] == [1536] * 64
