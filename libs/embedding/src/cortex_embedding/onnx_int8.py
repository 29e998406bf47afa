"""An int8 copy of the exported model, for search queries: about twice as fast, in the same space.

A short query costs ONNX Runtime ~4.5 ms on the fp32 model, ~2.6 ms of it even for one token: at a
query's few tokens the work is streaming the transformer's ~43 MB of MatMul weights from memory, not the
arithmetic. Quantized dynamically (int8 weights per output channel, activations quantized per run: the
MatMuls and the fused attention's input projections) they are a quarter of that: ~2.7 ms a query against
~5.7 on this machine, measured side by side.

Only queries use it. Documents keep their fp32 embeddings (they are the index), and a query vector of
the copy stays within cosine 0.97 (mean 0.99) of the fp32 model's on bench/search's queries, so it is
compared with them as the same model. Through the API (bench/quality): CISI nDCG@10 hybrid 0.4431
against 0.4445 in fp32, semantic 0.4305 against 0.4276; LoCoMo recall@10 0.6697 against 0.6668. Each
query runs alone (`OnnxSentenceEncoder(one_per_run=True)`): the activations are quantized by each run's
range, so queries run together would move each other's vectors (CISI hybrid came out 0.4399 so).

The copy is made once (~5 s) beside the fp32 export and checked on probes before use: a cosine under
`MIN_PROBE_COSINE` to the fp32 vector fails it, and the caller keeps the fp32 model.
"""

import logging
from pathlib import Path

import numpy as np

from cortex_embedding.onnx_export import ExportFailed, cached_file

FORMAT = "int8-dynamic-per-channel-v2"  # bump when the quantization changes
MIN_PROBE_COSINE = 0.95
PROBES = [
    "pricing",
    "How do enterprise customers negotiate their renewal discounts?",
    "Quarterly churn review — EMEA, with the champion's notes.",
    "weekly office",
]


def int8_model(onnx_file: Path, model_dir: Path) -> Path:
    """The int8 copy of the exported model `onnx_file`, quantized and checked first if not cached."""
    target = onnx_file.with_name(f"{onnx_file.stem}-{FORMAT}.onnx")
    return cached_file(target, lambda scratch: _quantize(onnx_file, model_dir, scratch))


class _NoPreprocessingAdvice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "pre-processing before quantization" not in record.getMessage()


def _quantize(onnx_file: Path, model_dir: Path, out: Path) -> None:
    from onnx import TensorProto
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # The quantizer advises shape pre-processing on the root logger; it changes nothing for MatMul weights.
    advice = _NoPreprocessingAdvice()
    logging.getLogger().addFilter(advice)
    try:
        quantize_dynamic(
            onnx_file,
            out,
            per_channel=True,
            weight_type=QuantType.QInt8,
            op_types_to_quantize=["MatMul", "Attention"],  # the fused attention's input projection too
            # The fused operators are outside ONNX's domain: its shape inference types none of their outputs.
            extra_options={"DefaultTensorType": TensorProto.FLOAT},
        )
    finally:
        logging.getLogger().removeFilter(advice)
    _check(out, onnx_file, model_dir)


def _check(int8_file: Path, onnx_file: Path, model_dir: Path) -> None:
    from cortex_embedding.onnx_model import OnnxSentenceEncoder

    def vectors(path: Path, one_per_run: bool) -> np.ndarray:
        encoder = OnnxSentenceEncoder(path, model_dir, threads=1, one_per_run=one_per_run)
        return np.asarray(encoder.embed(PROBES), dtype=np.float32)

    cosine = float(np.min(np.sum(vectors(int8_file, True) * vectors(onnx_file, False), axis=1)))
    if cosine < MIN_PROBE_COSINE:
        raise ExportFailed(f"the int8 copy's vectors are too far from the fp32 model's (cosine {cosine:.4f})")
