"""Where Qdrant's local mode keeps its files when CORTEX_QDRANT_PATH is not given."""

from pathlib import Path

import pytest

from cortex_vector_stores.settings import QdrantSettings


def test_local_mode_lives_in_the_data_directory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("CORTEX_QDRANT_PATH", raising=False)
    monkeypatch.setenv("CORTEX_DATA_DIR", str(tmp_path / "data"))
    assert QdrantSettings().path == tmp_path / "data" / "qdrant"


def test_without_a_data_directory_it_is_the_default_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CORTEX_QDRANT_PATH", raising=False)
    monkeypatch.delenv("CORTEX_DATA_DIR", raising=False)
    assert QdrantSettings().path == Path(".cortex/qdrant")


def test_a_path_given_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CORTEX_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("CORTEX_QDRANT_PATH", str(tmp_path / "elsewhere"))
    assert QdrantSettings().path == tmp_path / "elsewhere"
