"""The protocol ceiling: our HTTP stack parsing the same V2 request, answering a constant, no model.

Same uvicorn settings, same Starlette routing, same body reading, JSON decoding and
V2 validation (``serving.protocol``) as the model server; only the model call,
batching, metrics and the response encoding of real predictions are missing. The
model server's throughput divided by this one's is the share of the HTTP/JSON
limit it reaches.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from mlops.features import FeatureSpec
from mlops.onnx_model import OnnxScorer
from serving import protocol
from serving.tensors import HEADER_LENGTH, FeatureBounds, split_binary


def numeric_spec(width: int) -> FeatureSpec:
    """A spec of ``width`` numeric features, for a ceiling run without a model file."""
    names = tuple(f"x{i}" for i in range(width))
    return FeatureSpec(numeric=names, medians=(0.0,) * width, means=(0.0,) * width, stds=(1.0,) * width)


def create_app(name: str, spec: FeatureSpec) -> Starlette:
    bounds = FeatureBounds(spec)

    async def infer(request: Request) -> Response:
        try:
            header, binary = split_binary(await request.body(), request.headers.get(HEADER_LENGTH))
            parsed = protocol.parse_v2_infer(protocol.decode_json(header), bounds, binary)
        except protocol.ProtocolError as exc:
            return Response(
                protocol.error_body(exc.message), status_code=exc.status, media_type="application/json"
            )
        constant = np.full(len(parsed.x), 0.5, dtype=np.float32)
        body, header_length = protocol.v2_response(name, "1", constant, parsed)
        if header_length is None:
            return Response(body, media_type="application/json")
        return Response(
            body, media_type="application/octet-stream", headers={HEADER_LENGTH: str(header_length)}
        )

    async def ready(request: Request) -> Response:
        return Response(b'{"ready":true}', media_type="application/json")

    return Starlette(
        routes=[
            Route("/v2/health/ready", ready),
            Route("/v2/models/{name}/infer", infer, methods=["POST"]),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--name", default="bench-model")
    parser.add_argument("--width", type=int, default=20, help="numeric features, without --onnx")
    parser.add_argument("--onnx", default="", help="validate inputs against this model's feature spec")
    args = parser.parse_args()
    spec = OnnxScorer.load(Path(args.onnx)).spec if args.onnx else numeric_spec(args.width)
    uvicorn.run(
        create_app(args.name, spec),
        host="127.0.0.1",
        port=args.port,
        log_level="warning",
        access_log=False,
    )


if __name__ == "__main__":
    main()
