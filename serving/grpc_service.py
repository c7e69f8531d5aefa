"""gRPC's face of the data plane: the Open Inference Protocol's ``inference.GRPCInferenceService``.

The gRPC server runs in the same process as the HTTP server — a thread-pool ``grpc.server`` whose
calls run on the HTTP server's event loop (:class:`ThreadedServer`, ``--grpc-threads N``), or grpc.aio in
that loop (the default) — and calls
the same :class:`~serving.dataplane.DataPlane` methods REST does: the same router picks
the model, the same contract admits the input, the same batcher scores it (gRPC and REST
requests share batches), and the same metrics (``protocol="grpc"``) and request log
record it. This module only decodes messages into the data plane's terms and encodes
its answers; a :class:`~serving.errors.ServingError` aborts the call with the status of
:data:`~serving.errors.GRPC_STATUS` and the message REST would send. Auth is the same
bearer token, sent as the ``authorization`` metadata; liveness, readiness and model
readiness stay open like their REST twins.

Input arrives as typed ``contents`` (``fp32_contents`` / ``fp64_contents``) or as
``raw_input_contents`` (little-endian bytes, what ``tritonclient`` sends); the output
mirrors the form of the input.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn

import grpc
import numpy as np
import orjson

from mlops.model.onnx_model import INPUT_NAME, OUTPUT_NAME
from serving.columns import BYTES, Column, binary_column, column_rows, column_texts
from serving.dataplane import INPUT_WHERE, InferRequest, InferResponse
from serving.entity_features import ENTITY_DATATYPES, entity_ids, raw_ids
from serving.errors import (
    InvalidInput,
    ModelNotFound,
    ServingError,
    Unauthenticated,
    VersionGone,
    grpc_status,
)
from serving.explanations import EXPLAIN_PARAMETER, REASONS_OUTPUT
from serving.http import bearer_matches
from serving.proto import grpc_predict_v2_pb2 as pb
from serving.proto import grpc_predict_v2_pb2_grpc as pb_grpc
from serving.tensors import DTYPES, from_binary

if TYPE_CHECKING:
    from serving.config import ServerConfig
    from serving.dataplane import DataPlane, ModelContract

CONTENTS = {
    "FP32": "fp32_contents", "FP64": "fp64_contents", "INT8": "int_contents", "INT16": "int_contents",
    "INT32": "int_contents", "INT64": "int64_contents", "UINT8": "uint_contents", "UINT16": "uint_contents",
    "UINT32": "uint_contents", "UINT64": "uint64_contents", BYTES: "bytes_contents",
}  # fmt: skip
"""The typed ``contents`` field of each per-column datatype."""
PROTOCOL = "grpc"
"""The ``protocol`` label of gRPC's inference requests in the metrics."""


class GrpcTarget:
    """A call as the router reads a request: the model (and version) named, the metadata as headers."""

    __slots__ = ("headers", "path_params")

    def __init__(self, name: str, version: str, context: grpc.aio.ServicerContext):
        self.path_params = {"name": name, "version": version} if version else {"name": name}
        self.headers: dict[str, Any] = dict(context.invocation_metadata() or ())
        """The call's metadata (values are bytes for ``-bin`` keys)."""


class GrpcInputs:
    """The ``features`` tensor of a ModelInfer request: typed ``contents`` or one ``raw_input_contents`` entry."""

    __slots__ = ("request",)
    where: ClassVar[str] = INPUT_WHERE

    def __init__(self, request: pb.ModelInferRequest):
        self.request = request

    def read(self, contract: ModelContract) -> np.ndarray:
        request, where, width = self.request, self.where, contract.width
        if not contract.check_inputs([tensor.name for tensor in request.inputs]):
            return self._columns(contract)
        tensor = request.inputs[0]
        rows = contract.check_tensor(tensor.datatype, list(tensor.shape))
        if request.raw_input_contents:
            if len(request.raw_input_contents) != 1 or tensor.HasField("contents"):
                raise InvalidInput(
                    f"send {where} either as contents or as one raw_input_contents entry, not both"
                )
            return from_binary(request.raw_input_contents[0], tensor.datatype, rows, width, where)
        fp32 = tensor.datatype == "FP32"
        typed = tensor.contents.fp32_contents if fp32 else tensor.contents.fp64_contents
        if len(typed) != rows * width:
            field_name = "fp32_contents" if fp32 else "fp64_contents"
            raise InvalidInput(
                f"{where} {field_name} holds {len(typed)} values; shape [{rows}, {width}] needs {rows * width}"
            )
        return np.asarray(typed, dtype=DTYPES[tensor.datatype]).reshape(rows, width)

    def _columns(self, contract: ModelContract) -> np.ndarray:
        """One input per data column (:mod:`serving.columns`): typed contents, or one raw entry per input."""
        request = self.request
        raw = request.raw_input_contents
        if raw and len(raw) != len(request.inputs):
            raise InvalidInput(
                f"{len(raw)} raw_input_contents entries for {len(request.inputs)} inputs; send one per input, "
                "in input order (or typed contents)"
            )
        columns, rows = [], None
        for i, tensor in enumerate(request.inputs):
            name = tensor.name
            n = column_rows(name, tensor.datatype, list(tensor.shape))
            if rows is not None and n != rows:
                raise InvalidInput(
                    f"input {name!r} has {n} rows but input {request.inputs[0].name!r} has {rows}"
                )
            rows = n
            if raw:
                if tensor.HasField("contents"):
                    raise InvalidInput(f"input {name!r} has both contents and raw_input_contents; send one")
                columns.append(binary_column(name, tensor.datatype, raw[i], n))
                continue
            values = getattr(tensor.contents, CONTENTS[tensor.datatype])
            if len(values) != n:
                raise InvalidInput(
                    f"input {name!r} {CONTENTS[tensor.datatype]} holds {len(values)} values; "
                    f"its shape says {n}"
                )
            if tensor.datatype == BYTES:
                columns.append(
                    binary_column(name, BYTES, b"".join(len(v).to_bytes(4, "little") + v for v in values), n)
                )
            else:
                columns.append(Column(name, tensor.datatype, np.asarray(values, dtype=np.float64)))
        return contract.columns.assemble(columns, rows or 0)

    def subjects(self, name: str) -> list[str | None] | None:
        request = self.request
        for i, tensor in enumerate(request.inputs):
            if tensor.name != name:
                continue
            n = column_rows(name, tensor.datatype, list(tensor.shape))
            if request.raw_input_contents:
                return column_texts(binary_column(name, tensor.datatype, request.raw_input_contents[i], n))
            if tensor.datatype == BYTES:
                return [v.decode("utf-8", "replace") for v in tensor.contents.bytes_contents]
            values = getattr(tensor.contents, CONTENTS[tensor.datatype])
            return column_texts(Column(name, tensor.datatype, np.asarray(values, dtype=np.float64)))
        return None

    def keyed(self) -> tuple[str, list[Any]] | None:
        request = self.request
        if len(request.inputs) != 1:
            return None
        tensor = request.inputs[0]
        name, datatype, shape = tensor.name, tensor.datatype, list(tensor.shape)
        if name == INPUT_NAME or datatype not in ENTITY_DATATYPES:
            return None
        if request.raw_input_contents:
            if not shape:
                return None
            values: list[Any] = raw_ids(datatype, request.raw_input_contents[0], shape[0])
        elif datatype == BYTES:
            values = list(tensor.contents.bytes_contents)
        else:
            values = list(getattr(tensor.contents, CONTENTS[datatype]))
        return entity_ids(name, datatype, shape, values)


async def abort(context: grpc.aio.ServicerContext, error: ServingError) -> NoReturn:
    """End the call with ``error``'s status (:data:`~serving.errors.GRPC_STATUS`) and message."""
    message = error.message
    if isinstance(error, VersionGone):
        message = f"{message}; retry without model_version to follow the alias"
    await context.abort(grpc.StatusCode[grpc_status(error)], message)
    raise AssertionError("unreachable: context.abort raises")


class InferenceServicer(pb_grpc.GRPCInferenceServiceServicer):
    """``GRPCInferenceService`` over the server's data plane."""

    def __init__(self, plane: DataPlane, auth_token: str = ""):
        self.plane = plane
        self.token = auth_token.encode()

    async def _authorize(self, context: grpc.aio.ServicerContext) -> None:
        if not self.token:
            return
        supplied = dict(context.invocation_metadata() or ()).get("authorization", "")
        if not bearer_matches(supplied.encode() if isinstance(supplied, str) else supplied, self.token):
            what = "missing" if not supplied else "invalid"
            error = Unauthenticated(f"{what} bearer token; send metadata 'authorization: Bearer <token>'")
            self.plane.failed(error)
            await abort(context, error)

    async def ServerLive(self, request: Any, context: grpc.aio.ServicerContext) -> pb.ServerLiveResponse:
        return pb.ServerLiveResponse(live=self.plane.live())

    async def ServerReady(self, request: Any, context: grpc.aio.ServicerContext) -> pb.ServerReadyResponse:
        return pb.ServerReadyResponse(ready=self.plane.ready())

    async def ModelReady(
        self, request: pb.ModelReadyRequest, context: grpc.aio.ServicerContext
    ) -> pb.ModelReadyResponse:
        try:  # like REST's 404, an unknown model or version is simply not ready
            status = self.plane.model_ready(GrpcTarget(request.name, request.version, context))
        except ModelNotFound:
            return pb.ModelReadyResponse(ready=False)
        return pb.ModelReadyResponse(ready=status.ready)

    async def ServerMetadata(
        self, request: Any, context: grpc.aio.ServicerContext
    ) -> pb.ServerMetadataResponse:
        await self._authorize(context)
        meta = self.plane.server_metadata()
        return pb.ServerMetadataResponse(name=meta.name, version=meta.version, extensions=meta.extensions)

    async def ModelMetadata(
        self, request: pb.ModelMetadataRequest, context: grpc.aio.ServicerContext
    ) -> pb.ModelMetadataResponse:
        await self._authorize(context)
        try:
            meta = self.plane.model_metadata(GrpcTarget(request.name, request.version, context))
        except ServingError as exc:
            await abort(context, exc)
        tensor = pb.ModelMetadataResponse.TensorMetadata
        return pb.ModelMetadataResponse(
            name=meta.name,
            versions=meta.versions,
            platform=meta.platform,
            inputs=[tensor(name=t.name, datatype=t.datatype, shape=t.shape) for t in meta.inputs],
            outputs=[tensor(name=t.name, datatype=t.datatype, shape=t.shape) for t in meta.outputs],
        )

    async def _infer(
        self, request: pb.ModelInferRequest, context: grpc.aio.ServicerContext, received: float
    ) -> InferResponse:
        """Decode ``request`` and run it through the data plane; a refusal aborts the call."""
        target = GrpcTarget(request.model_name, request.model_version, context)
        outputs = [output.name for output in request.outputs]
        # The request log keeps the client's id (what mlops feedback joins labels by), else a new one.
        log_id = request.id or self.plane.request_ids.new()
        try:
            explain = explain_requested(request)
        except InvalidInput as exc:  # refused before the data plane: counted like its refusals
            self.plane.failed(exc, PROTOCOL)
            await abort(context, exc)
        inferred = InferRequest(
            target, GrpcInputs(request), PROTOCOL, outputs, request.id, log_id, received, explain
        )
        try:
            return await self.plane.infer(inferred)
        except ServingError as exc:
            await abort(context, exc)

    async def ModelInfer(
        self, request: pb.ModelInferRequest, context: grpc.aio.ServicerContext
    ) -> pb.ModelInferResponse:
        received = time.perf_counter()
        await self._authorize(context)
        with self.plane.in_flight.request():  # a call that is alone skips the batcher's queue, as on REST
            answer = await self._infer(request, context, received)
        y = answer.probabilities
        output = pb.ModelInferResponse.InferOutputTensor(name=OUTPUT_NAME, datatype="FP32", shape=[len(y)])
        response = pb.ModelInferResponse(
            model_name=answer.model_name, model_version=answer.model_version, id=request.id, outputs=[output]
        )
        if request.raw_input_contents:
            response.raw_output_contents.append(y.astype("<f4", copy=False).tobytes())
        else:
            response.outputs[0].contents.fp32_contents.extend(y.tolist())
        if answer.reasons is not None:
            texts = [orjson.dumps(row) for row in answer.reasons]
            reasons = response.outputs.add(name=REASONS_OUTPUT, datatype="BYTES", shape=[len(texts)])
            if (
                request.raw_input_contents
            ):  # the protocol's raw BYTES: a 4-byte little-endian length per element
                response.raw_output_contents.append(b"".join(len(t).to_bytes(4, "little") + t for t in texts))
            else:
                reasons.contents.bytes_contents.extend(texts)
        return response


def explain_requested(request: pb.ModelInferRequest) -> bool:
    """Whether the request asks for reasons: ``parameters["explain"]`` with ``bool_param`` true."""
    if EXPLAIN_PARAMETER not in request.parameters:
        return False
    parameter = request.parameters[EXPLAIN_PARAMETER]
    if parameter.WhichOneof("parameter_choice") != "bool_param":
        raise InvalidInput(
            f"parameters.{EXPLAIN_PARAMETER} is not a bool_param; send bool_param: true to answer each row's "
            "reasons, or leave it out"
        )
    return parameter.bool_param


def create_aio_server(plane: DataPlane, config: ServerConfig) -> tuple[grpc.aio.Server, int]:
    """The grpc.aio server bound to ``config.host:config.grpc_port`` (not yet started) and the bound port."""
    limit = config.max_payload_bytes
    server = grpc.aio.server(options=[("grpc.max_receive_message_length", limit), ("grpc.so_reuseport", 0)])
    pb_grpc.add_GRPCInferenceServiceServicer_to_server(InferenceServicer(plane, config.auth_token), server)
    port = server.add_insecure_port(f"{config.host}:{config.grpc_port}")
    return server, port


def create_server(plane: DataPlane, config: ServerConfig) -> grpc.aio.Server | ThreadedServer:
    """The gRPC server ``config.grpc_threads`` asks for, bound (call inside the event loop), not yet started.

    Both have ``await start()`` and ``await stop(grace)``.
    """
    if config.grpc_threads == 0:
        return create_aio_server(plane, config)[0]
    return ThreadedServer(plane, config, config.grpc_threads)


class _ThreadContext:
    """A thread-pool call's context as the async servicer uses it (``abort`` awaited on the loop)."""

    __slots__ = ("context",)

    def __init__(self, context: grpc.ServicerContext):
        self.context = context

    def invocation_metadata(self) -> Any:
        return self.context.invocation_metadata()

    async def abort(self, code: grpc.StatusCode, details: str) -> NoReturn:
        self.context.abort(code, details)  # records the status on the call and raises
        raise AssertionError("unreachable: context.abort raises")


def _on_the_loop(name: str) -> Callable[[ThreadedServicer, Any, grpc.ServicerContext], Any]:
    """The thread-pool servicer's RPC ``name``: the async servicer's method of that name, run on the loop."""

    def call(self: ThreadedServicer, request: Any, context: grpc.ServicerContext) -> Any:
        return self._run(getattr(self.inner, name), request, context)

    call.__name__ = call.__qualname__ = name
    return call


class ThreadedServicer(pb_grpc.GRPCInferenceServiceServicer):
    """The :class:`InferenceServicer` behind the thread-pool ``grpc.server``: each call runs the async
    method on the server's event loop (where the batcher and metrics live) and waits for it."""

    def __init__(self, inner: InferenceServicer, loop: Any):
        self.inner = inner
        self.loop = loop

    def _run(self, method: Any, request: Any, context: grpc.ServicerContext) -> Any:
        return asyncio.run_coroutine_threadsafe(method(request, _ThreadContext(context)), self.loop).result()

    ServerLive = _on_the_loop("ServerLive")
    ServerReady = _on_the_loop("ServerReady")
    ModelReady = _on_the_loop("ModelReady")
    ServerMetadata = _on_the_loop("ServerMetadata")
    ModelMetadata = _on_the_loop("ModelMetadata")
    ModelInfer = _on_the_loop("ModelInfer")


class ThreadedServer:
    """``grpc.server`` on a thread pool, with the async ``start``/``stop`` of ``grpc.aio.Server``.

    ``--grpc-threads N``: each call's thread hands the async servicer's method to the event loop,
    where the data plane, batcher and metrics live, and waits for it. The alternative to grpc.aio,
    whose handler, suspended while it waits for its batch, is resumed through grpc's own
    completion-queue machinery (measured in serving/README.md, "Which gRPC stack").
    """

    def __init__(self, plane: DataPlane, config: ServerConfig, threads: int):
        from concurrent.futures import ThreadPoolExecutor

        limit = config.max_payload_bytes
        self.server = grpc.server(
            ThreadPoolExecutor(threads, thread_name_prefix="grpc"),
            options=[("grpc.max_receive_message_length", limit), ("grpc.so_reuseport", 0)],
        )
        servicer = ThreadedServicer(InferenceServicer(plane, config.auth_token), asyncio.get_running_loop())
        pb_grpc.add_GRPCInferenceServiceServicer_to_server(servicer, self.server)
        self.port = self.server.add_insecure_port(f"{config.host}:{config.grpc_port}")

    async def start(self) -> None:
        self.server.start()

    async def stop(self, grace: float) -> None:
        """Refuse new calls, let those in flight finish (up to ``grace`` s): the loop keeps serving them."""
        await asyncio.to_thread(self.server.stop(grace).wait)
