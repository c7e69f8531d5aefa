"""MLServer custom runtime: the benchmark's ONNX model scored with ONNX Runtime, one intra-op thread like ours.

Runs inside MLServer's own virtual environment (``setup_venvs.sh``), so it imports only
MLServer, ONNX Runtime and numpy, nothing from this repository. ``bench_serving_peers.py``
writes a ``model-settings.json`` naming ``mlserver_onnx_runtime.OnnxRuntimeModel`` with the
ONNX file as ``parameters.uri`` and puts this folder on ``PYTHONPATH``.

The request's ``features`` tensor is decoded with MLServer's own ``NumpyCodec`` (JSON data,
gRPC typed contents or raw bytes, whatever MLServer accepts) and the probabilities go back
as one FP32 tensor, so MLServer is measured doing its usual encode and decode.
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
from mlserver import MLModel
from mlserver.codecs import NumpyCodec
from mlserver.types import InferenceRequest, InferenceResponse


class OnnxRuntimeModel(MLModel):
    """One ``InferenceSession`` per model, loaded from ``parameters.uri``."""

    async def load(self) -> bool:
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        uri = self.settings.parameters.uri if self.settings.parameters else None
        if not uri:
            raise ValueError("model-settings.json needs parameters.uri: the path of the ONNX file to serve")
        self._session = ort.InferenceSession(uri, options, providers=["CPUExecutionProvider"])
        self.ready = True
        return self.ready

    async def predict(self, payload: InferenceRequest) -> InferenceResponse:
        request_input = payload.inputs[0]
        x = np.asarray(NumpyCodec.decode_input(request_input), dtype=np.float32)
        x = x.reshape(-1, request_input.shape[-1])
        (y,) = self._session.run(["probability"], {"features": x})
        output = NumpyCodec.encode_output("probability", np.asarray(y, dtype=np.float32).ravel())
        return InferenceResponse(model_name=self.name, id=payload.id, outputs=[output])
