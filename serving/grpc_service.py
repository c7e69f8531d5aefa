"""The Open Inference Protocol over gRPC (``inference.GRPCInferenceService``), beside the REST routes.

The gRPC server runs in the same process and event loop as the HTTP server and goes
through the same :class:`~serving.handlers.Handlers`: the same router picks the model,
the same :class:`~serving.tensors.FeatureBounds` admits the input, the same batcher
scores it (gRPC and REST requests share batches), and the same metrics (``protocol="grpc"``)
and request log record it. Auth is the same bearer token, sent as the ``authorization``
metadata; liveness, readiness and model readiness stay open like their REST twins.

Input arrives as typed ``contents`` (``fp32_contents`` / ``fp64_contents``) or as
``raw_input_contents`` (little-endian bytes, what ``tritonclient`` sends); the output
mirrors the form of the input. Client errors map to gRPC status codes with the same
messages the REST routes return.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import grpc
import numpy as np

from mlops.model.onnx_model import INPUT_NAME, OUTPUT_NAME
from serving import protocol
from serving.batching import VersionGone
from serving.errors import ProtocolError
from serving.handlers import CLIENT_CLOSED, EXTENSIONS, package_version
from serving.http import bearer_matches
from serving.proto import grpc_predict_v2_pb2 as pb
from serving.proto import grpc_predict_v2_pb2_grpc as pb_grpc
from serving.tensors import DTYPES, from_binary

if TYPE_CHECKING:
    from serving.handlers import Handlers
    from serving.routing.model_router import Scorer

log = logging.getLogger("serving")
STATUS = {
    400: grpc.StatusCode.INVALID_ARGUMENT,
    401: grpc.StatusCode.UNAUTHENTICATED,
    404: grpc.StatusCode.NOT_FOUND,
    413: grpc.StatusCode.RESOURCE_EXHAUSTED,
    CLIENT_CLOSED: grpc.StatusCode.CANCELLED,
}
PROTOCOL = "grpc"


@dataclass(frozen=True)
class GrpcRoute:
    """What a :class:`~serving.routing.model_router.ModelRouter` reads from a request, for a gRPC call."""

    path_params: dict[str, str]
    headers: dict[str, Any] = field(default_factory=dict)
    """The call's metadata (values are bytes for ``-bin`` keys)."""


def route(name: str, version: str, context: grpc.aio.ServicerContext) -> Any:
    """The call as the router sees a REST request: the model (and version) named, the metadata as headers."""
    params = {"name": name, "version": version} if version else {"name": name}
    return GrpcRoute(params, dict(context.invocation_metadata() or ()))


def parse_infer(request: pb.ModelInferRequest, width: int) -> tuple[np.ndarray, bool]:
    """The ``features`` values of a ModelInfer request as [rows, width], and whether they came raw."""
    expected = f"this model takes one input {INPUT_NAME!r} of datatype FP32 or FP64 and shape [N, {width}]"
    names = [tensor.name for tensor in request.inputs]
    if names != [INPUT_NAME]:
        raise ProtocolError(400, f"inputs are {names}; {expected}")
    tensor = request.inputs[0]
    where = f"input {INPUT_NAME!r}"
    if tensor.datatype not in DTYPES:
        raise ProtocolError(
            400, f"{where} has datatype {tensor.datatype!r}; accepted datatypes are {list(DTYPES)}"
        )
    shape = list(tensor.shape)
    if len(shape) != 2 or shape[1] != width or shape[0] < 0:
        raise ProtocolError(400, f"{where} has shape {shape}; {expected}")
    wanted = [output.name for output in request.outputs]
    if any(name != OUTPUT_NAME for name in wanted):
        raise ProtocolError(400, f"requested outputs {wanted}; this model has one output {OUTPUT_NAME!r}")
    rows = shape[0]
    if request.raw_input_contents:
        if len(request.raw_input_contents) != 1 or tensor.HasField("contents"):
            raise ProtocolError(
                400, f"send {where} either as contents or as one raw_input_contents entry, not both"
            )
        return from_binary(request.raw_input_contents[0], tensor.datatype, rows, width, where), True
    typed = tensor.contents.fp32_contents if tensor.datatype == "FP32" else tensor.contents.fp64_contents
    if len(typed) != rows * width:
        field_name = "fp32_contents" if tensor.datatype == "FP32" else "fp64_contents"
        raise ProtocolError(
            400,
            f"{where} {field_name} holds {len(typed)} values; shape [{rows}, {width}] needs {rows * width}",
        )
    return np.asarray(typed, dtype=DTYPES[tensor.datatype]).reshape(rows, width), False


class InferenceServicer(pb_grpc.GRPCInferenceServiceServicer):
    """``GRPCInferenceService`` on top of the REST server's handlers."""

    def __init__(self, handlers: Handlers):
        self.handlers = handlers
        self.token = handlers.config.auth_token.encode()

    async def _fail(self, context: grpc.aio.ServicerContext, status: int, message: str) -> Any:
        handlers = self.handlers
        handlers.metrics.error(handlers.name, handlers.live_version, handlers.reason(status))
        await context.abort(STATUS.get(status, grpc.StatusCode.INTERNAL), message)

    async def _authorize(self, context: grpc.aio.ServicerContext) -> None:
        if not self.token:
            return
        supplied = dict(context.invocation_metadata() or ()).get("authorization", "")
        if not bearer_matches(supplied.encode() if isinstance(supplied, str) else supplied, self.token):
            what = "missing" if not supplied else "invalid"
            await self._fail(
                context, 401, f"{what} bearer token; send metadata 'authorization: Bearer <token>'"
            )

    async def _select(
        self, name: str, version: str, context: grpc.aio.ServicerContext
    ) -> tuple[Scorer, str | None]:
        try:
            return self.handlers.router.select(route(name, version, context))
        except ProtocolError as exc:
            return await self._fail(context, exc.status, exc.message)

    async def ServerLive(self, request: Any, context: grpc.aio.ServicerContext) -> pb.ServerLiveResponse:
        return pb.ServerLiveResponse(live=True)

    async def ServerReady(self, request: Any, context: grpc.aio.ServicerContext) -> pb.ServerReadyResponse:
        return pb.ServerReadyResponse(ready=True)

    async def ModelReady(
        self, request: pb.ModelReadyRequest, context: grpc.aio.ServicerContext
    ) -> pb.ModelReadyResponse:
        try:  # like REST's 404, an unknown model or version is simply not ready
            self.handlers.router.select(route(request.name, request.version, context))
        except ProtocolError:
            return pb.ModelReadyResponse(ready=False)
        return pb.ModelReadyResponse(ready=True)

    async def ServerMetadata(
        self, request: Any, context: grpc.aio.ServicerContext
    ) -> pb.ServerMetadataResponse:
        await self._authorize(context)
        return pb.ServerMetadataResponse(
            name="mlops-serving", version=package_version(), extensions=EXTENSIONS
        )

    async def ModelMetadata(
        self, request: pb.ModelMetadataRequest, context: grpc.aio.ServicerContext
    ) -> pb.ModelMetadataResponse:
        await self._authorize(context)
        backend, _ = await self._select(request.name, request.version, context)
        current = backend.holder.current
        tensor = pb.ModelMetadataResponse.TensorMetadata
        return pb.ModelMetadataResponse(
            name=self.handlers.name,
            versions=[current.version],
            platform=protocol.PLATFORM,
            inputs=[tensor(name=INPUT_NAME, datatype="FP32", shape=[-1, current.n_features])],
            outputs=[tensor(name=OUTPUT_NAME, datatype="FP32", shape=[-1])],
        )

    async def ModelInfer(
        self, request: pb.ModelInferRequest, context: grpc.aio.ServicerContext
    ) -> pb.ModelInferResponse:
        started = time.perf_counter()
        handlers = self.handlers
        name, metrics = handlers.name, handlers.metrics
        await self._authorize(context)
        try:
            backend, version = handlers.router.select(
                route(request.model_name, request.model_version, context)
            )
            _, bounds = handlers.inputs(backend.holder.current)
            values, raw = parse_infer(request, len(bounds.names))
            x = bounds.admit(values, f"input {INPUT_NAME!r}")
            # The request log keeps the client's id (what mlops feedback joins labels by), else a new one.
            y, used = await handlers.score(backend, version, x, request.id or uuid.uuid4().hex)
        except ProtocolError as exc:
            metrics.answered(name, handlers.live_version, PROTOCOL, exc.status)
            return await self._fail(context, exc.status, exc.message)
        except VersionGone as exc:
            metrics.answered(name, handlers.live_version, PROTOCOL, 404)
            message = f"{exc}; retry without model_version to follow the alias"
            return await self._fail(context, 404, message)
        except Exception as exc:
            log.exception("inference failed")
            metrics.answered(name, handlers.live_version, PROTOCOL, 500)
            message = f"inference failed: {type(exc).__name__}: {exc}"
            return await self._fail(context, 500, message)
        output = pb.ModelInferResponse.InferOutputTensor(name=OUTPUT_NAME, datatype="FP32", shape=[len(y)])
        response = pb.ModelInferResponse(
            model_name=name, model_version=used.version, id=request.id, outputs=[output]
        )
        if raw:
            response.raw_output_contents.append(y.astype("<f4", copy=False).tobytes())
        else:
            response.outputs[0].contents.fp32_contents.extend(y.tolist())
        metrics.answered(name, used.version, PROTOCOL, 200, time.perf_counter() - started)
        return response


def create_server(handlers: Handlers) -> tuple[grpc.aio.Server, int]:
    """The gRPC server bound to ``config.host:config.grpc_port`` (not yet started) and the bound port."""
    config = handlers.config
    limit = config.max_payload_bytes
    server = grpc.aio.server(options=[("grpc.max_receive_message_length", limit), ("grpc.so_reuseport", 0)])
    pb_grpc.add_GRPCInferenceServiceServicer_to_server(InferenceServicer(handlers), server)
    port = server.add_insecure_port(f"{config.host}:{config.grpc_port}")
    return server, port
