"""BentoML service: the benchmark's ONNX model scored with ONNX Runtime, one intra-op thread like ours.

Runs inside BentoML's own virtual environment (``setup_venvs.sh``), so it imports only
BentoML, ONNX Runtime and numpy. ``bench_serving_peers.py`` starts it as

    <bentoml-venv>/bin/bentoml serve bentoml_onnx_service:OnnxService --host 127.0.0.1 --port PORT

from this folder, with the ONNX file in ``MLOPS_BENCH_ONNX``. One worker (``workers=1``), so
the service scores in one process like every other peer. The API takes BentoML's JSON
(``{"features": [[...], ...]}``) and answers a JSON list of probabilities.
"""

from __future__ import annotations

import os

import bentoml
import numpy as np
import onnxruntime as ort

ONNX_ENV = "MLOPS_BENCH_ONNX"


@bentoml.service(workers=1)
class OnnxService:
    def __init__(self) -> None:
        path = os.environ.get(ONNX_ENV, "")
        if not path:
            raise ValueError(f"set {ONNX_ENV} to the ONNX file this service scores")
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])

    @bentoml.api
    def predict(self, features: np.ndarray) -> np.ndarray:
        x = np.asarray(features, dtype=np.float32).reshape(-1, self.session.get_inputs()[0].shape[-1])
        (y,) = self.session.run(["probability"], {"features": x})
        return np.asarray(y, dtype=np.float32).ravel()
