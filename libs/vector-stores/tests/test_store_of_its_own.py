"""What the services make of the chosen `vector_store` plugin."""

from pathlib import Path

import pytest

from cortex_vector_stores.binding import store_of_its_own
from cortex_vector_stores.pgvector import PgVectorStore
from cortex_vector_stores.qdrant import QdrantVectorStore
from cortex_vector_stores.settings import PgVectorSettings, QdrantSettings


def test_pgvector_is_the_passages_own_rows_so_nothing_is_mirrored() -> None:
    assert store_of_its_own(PgVectorStore(PgVectorSettings())) is None


def test_qdrant_is_a_store_of_its_own(tmp_path: Path) -> None:
    store = QdrantVectorStore(QdrantSettings(path=tmp_path))
    assert store_of_its_own(store) is store


def test_a_plugin_that_is_no_vector_store_is_refused() -> None:
    with pytest.raises(TypeError, match="VectorStore protocol"):
        store_of_its_own(object())
