"""The protocol ceiling: our stack parsing the same V2 request, answering a constant, no model.

Same uvicorn settings, same Starlette routing, same body reading, JSON or binary
decoding and V2 validation (``serving.protocol``, ``serving.dataplane.ModelContract``) as the model
server; only the model call, batching, metrics and the response encoding of real
predictions are missing. The model server's throughput divided by this one's is the
share of the transport's limit it reaches.

``--grpc-port`` adds the gRPC ceiling (``GRPCInferenceService.ModelInfer`` parsing and
admitting the input, constant reply) in the same event loop. ``--server granian``
serves the same ASGI app on granian (Rust HTTP, one worker) instead of uvicorn.

The raw ceilings drop the framework too: ``--server uvicorn-raw`` / ``granian-raw`` serve a bare ASGI
callable and ``granian-rsgi`` granian's own RSGI interface, each reading the body, parsing the V2 JSON
(``orjson``) and answering a constant V2 response, with no routing, no validation and no model: what the
HTTP stack alone allows, the limit of the server's raw scoring path (``serving/fast_path.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from mlops.data.features import FeatureSpec
from mlops.model.onnx_model import OnnxScorer
from serving import protocol
from serving.dataplane import InferResponse, ModelContract
from serving.errors import ServingError
from serving.http import error_response
from serving.tensors import HEADER_LENGTH, split_binary

GRPC_PORT_ENV = "MLOPS_CEILING_GRPC_PORT"
ONNX_ENV = "MLOPS_CEILING_ONNX"


def numeric_spec(width: int) -> FeatureSpec:
    """A spec of ``width`` numeric features, for a ceiling run without a model file."""
    names = tuple(f"x{i}" for i in range(width))
    return FeatureSpec(numeric=names, medians=(0.0,) * width, means=(0.0,) * width, stds=(1.0,) * width)


def create_app(name: str, spec: FeatureSpec) -> Starlette:
    contract = ModelContract(spec)

    async def infer(request: Request) -> Response:
        try:
            header, binary = split_binary(await request.body(), request.headers.get(HEADER_LENGTH))
            payload = protocol.decode_json(header)
            binary_output, _ = protocol.requested_outputs(payload)
            inputs = protocol.V2Inputs(payload, binary)
            x = contract.bounds.admit(inputs.read(contract), inputs.where)
        except ServingError as exc:
            return error_response(exc)
        constant = np.full(len(x), 0.5, dtype=np.float32)
        answer = InferResponse(name, "1", protocol.request_id(payload), constant)
        body, header_length = protocol.v2_response(answer, binary_output)
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
        ],
        lifespan=_grpc_lifespan(name, spec, int(os.environ.get(GRPC_PORT_ENV, "0"))),
    )


def _grpc_lifespan(name: str, spec: FeatureSpec, port: int) -> Any:
    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if not port:
            yield
            return
        import grpc

        from serving.grpc_service import GrpcInputs
        from serving.proto import grpc_predict_v2_pb2 as pb
        from serving.proto import grpc_predict_v2_pb2_grpc as pb_grpc

        contract = ModelContract(spec)

        class Constant(pb_grpc.GRPCInferenceServiceServicer):
            async def ModelInfer(self, request: Any, context: Any) -> Any:
                try:
                    inputs = GrpcInputs(request)
                    x = contract.bounds.admit(inputs.read(contract), inputs.where)
                except ServingError as exc:
                    await context.abort(grpc.StatusCode.INVALID_ARGUMENT, exc.message)
                output = pb.ModelInferResponse.InferOutputTensor(
                    name="probability", datatype="FP32", shape=[len(x)]
                )
                response = pb.ModelInferResponse(model_name=name, model_version="1", outputs=[output])
                response.raw_output_contents.append(np.full(len(x), 0.5, dtype="<f4").tobytes())
                return response

        server = grpc.aio.server()
        pb_grpc.add_GRPCInferenceServiceServicer_to_server(Constant(), server)
        server.add_insecure_port(f"127.0.0.1:{port}")
        await server.start()
        yield
        await server.stop(1)

    return lifespan


_CONSTANT = (
    b'{"model_name":"bench-model","model_version":"1","outputs":[{"name":"probability","datatype":"FP32",'
    b'"shape":[1],"data":[0.5]}]}'
)
_ASGI_HEADERS = [(b"content-type", b"application/json"), (b"content-length", str(len(_CONSTANT)).encode())]


async def raw_asgi_app(scope: Any, receive: Any, send: Any) -> None:
    """Bare ASGI: read the body, parse its JSON, answer a constant (200 to any path, for a ceiling only)."""
    if scope["type"] != "http":  # lifespan: accept start and shutdown
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    if scope["method"] == "POST":
        orjson.loads(b"".join(chunks))
    await send({"type": "http.response.start", "status": 200, "headers": _ASGI_HEADERS})
    await send({"type": "http.response.body", "body": _CONSTANT})


class RsgiApp:
    """granian's RSGI interface: the same work as :func:`raw_asgi_app` on granian's own protocol."""

    async def __rsgi__(self, scope: Any, protocol: Any) -> None:
        if scope.method == "POST":
            orjson.loads(await protocol())
        protocol.response_bytes(200, [("content-type", "application/json")], _CONSTANT)


def granian_app() -> Starlette:
    """Factory for ``granian --factory benchmarks.ceiling_server:granian_app`` (spec from the environment)."""
    onnx = os.environ.get(ONNX_ENV, "")
    spec = OnnxScorer.load(Path(onnx)).spec if onnx else numeric_spec(20)
    return create_app("bench-model", spec)


RSGI_APP = RsgiApp()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--name", default="bench-model")
    parser.add_argument("--width", type=int, default=20, help="numeric features, without --onnx")
    parser.add_argument("--onnx", default="", help="validate inputs against this model's feature spec")
    parser.add_argument("--grpc-port", type=int, default=0, help="also serve the gRPC ceiling here")
    parser.add_argument(
        "--server",
        choices=["uvicorn", "granian", "uvicorn-raw", "granian-raw", "granian-rsgi"],
        default="uvicorn",
        help="the -raw and -rsgi servers parse the body and answer a constant: no routing, no validation",
    )
    args = parser.parse_args()
    os.environ[GRPC_PORT_ENV] = str(args.grpc_port)
    if args.server in ("granian-raw", "granian-rsgi"):
        interface, target = (
            ("asgi", "benchmarks.ceiling_server:raw_asgi_app")
            if args.server == "granian-raw"
            else ("rsgi", "benchmarks.ceiling_server:RSGI_APP")
        )
        command = [
            str(Path(sys.executable).with_name("granian")), "--interface", interface, "--host", "127.0.0.1",
            "--port", str(args.port), "--workers", "1", "--loop", "uvloop", "--no-access-log",
            "--log-level", "warning", target,
        ]  # fmt: skip
        os.execv(command[0], command)
    if args.server == "uvicorn-raw":
        uvicorn.run(raw_asgi_app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)
        return
    if args.server == "granian":
        os.environ[ONNX_ENV] = args.onnx
        command = [
            str(Path(sys.executable).with_name("granian")), "--interface", "asgi", "--host", "127.0.0.1",
            "--port", str(args.port), "--workers", "1", "--loop", "uvloop", "--no-access-log",
            "--log-level", "warning", "--factory", "benchmarks.ceiling_server:granian_app",
        ]  # fmt: skip
        os.execv(command[0], command)
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
