"""The same ONNX model behind kserve's ModelServer, for the serving benchmark's comparison.

Runs in its own virtual environment (kserve 0.21 pins pandas 2.x, the project
uses pandas 3), so it imports nothing from this repository: only kserve, ONNX
Runtime and numpy. Usage (what ``bench_serving.py`` runs):

    <kserve-venv>/bin/python benchmarks/kserve_server.py --model_path model.onnx --model_name NAME \
        --http_port PORT --enable_grpc false --enable_latency_logging false

Per-request access logging is switched off so that kserve is measured, like our
server, without a log line per request. ``--enable_grpc true --grpc_port PORT`` also serves
kserve's gRPC V2 endpoint (what ``bench_serving_peers.py`` runs); REST answers binary
tensors when the request asks for them (``"parameters": {"binary_data_output": true}``), gRPC
answers raw contents when the request sent raw contents.
"""

from __future__ import annotations

import argparse
import logging
import uuid
from typing import Any

import numpy as np
import onnxruntime as ort
import uvicorn
from kserve import InferOutput, InferRequest, InferResponse, Model, ModelServer
from kserve import model_server as kserve_model_server


class OnnxModel(Model):
    def __init__(self, name: str, path: str):
        super().__init__(name)
        self.path = path
        self.session: ort.InferenceSession | None = None
        self.load()

    def load(self) -> bool:
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(self.path, options, providers=["CPUExecutionProvider"])
        self.ready = True
        return True

    async def predict(
        self, payload: InferRequest, headers: dict[str, str] | None = None, response_headers: Any = None
    ) -> InferResponse:
        assert self.session is not None
        x = np.asarray(payload.inputs[0].as_numpy(), dtype=np.float32).reshape(
            -1, payload.inputs[0].shape[-1]
        )
        (y,) = self.session.run(["probability"], {"features": x})
        output = InferOutput(name="probability", shape=list(y.shape), datatype="FP32")
        output.set_data_from_numpy(y, binary_data=bool(payload.use_binary_outputs))
        return InferResponse(
            model_name=self.name, infer_outputs=[output], response_id=payload.id or str(uuid.uuid4())
        )


class LoopbackConfig(uvicorn.Config):
    """kserve hard-codes host 0.0.0.0; the benchmark must only listen on 127.0.0.1."""

    def __init__(self, *args: Any, **kwargs: Any):
        kwargs["host"] = "127.0.0.1"
        super().__init__(*args, **kwargs)


def main() -> None:
    uvicorn.Config = LoopbackConfig  # type: ignore[misc]
    parser = argparse.ArgumentParser(parents=[kserve_model_server.parser], conflict_handler="resolve")
    parser.add_argument("--model_path", required=True)
    parser.add_argument("--model_name", required=True)
    args, _ = parser.parse_known_args()
    # Filters survive the dictConfig kserve applies at start; a per-request log line would dominate the cost.
    for name in ("uvicorn.access", "kserve.trace"):
        logging.getLogger(name).addFilter(lambda record: False)
    ModelServer(
        http_port=args.http_port,
        grpc_port=args.grpc_port,
        enable_grpc=args.enable_grpc,
        enable_latency_logging=False,
    ).start([OnnxModel(args.model_name, args.model_path)])


if __name__ == "__main__":
    main()
