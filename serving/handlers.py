"""REST's face of the data plane: V2 (JSON and binary tensors), V1, health, metadata and /metrics.

One :class:`Handlers` object per app has one method per route (the path table is
:mod:`serving.routes`). Each decodes its request with :mod:`serving.protocol`, calls the
same :class:`~serving.dataplane.DataPlane` method gRPC calls, and encodes the answer; a
:class:`~serving.errors.ServingError` becomes ``{"error": message}`` with the status of
:data:`~serving.errors.HTTP_STATUS`. Routing, input checks, scoring, the request log and the
metrics are the data plane's. The inference path is the measured hot path: orjson in,
orjson out, one await for the model, the Starlette request itself as the router's target.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from starlette.requests import ClientDisconnect
from starlette.responses import Response

from serving import protocol
from serving.dataplane import InferRequest
from serving.errors import ClientClosed, MethodNotAllowed, NotFound, ServingError, VersionGone
from serving.http import JSON, error_response, json_response, read_body
from serving.metrics import CONTENT_TYPE
from serving.tensors import HEADER_LENGTH, split_binary

if TYPE_CHECKING:
    from starlette.requests import Request

    from serving.dataplane import DataPlane

REQUEST_ID_HEADER = "x-request-id"
"""The id a response carries and the request log keeps: the V2 body's ``id``, else this header, else a new one."""
V2, V1 = "v2", "v1"
"""The ``protocol`` labels of REST's inference requests in the metrics."""


def header_value(text: str) -> str:
    """``text`` as a response header can carry it: printable ASCII as is, anything else percent-encoded.

    A client's id may hold any character (the V2 body's ``id`` is a JSON string); a header holds
    latin-1 without control characters or spaces at either end, and a raw newline would split the
    response.
    """
    if text.isascii() and text.isprintable() and text == text.strip(" "):  # h11 refuses edge spaces
        return text
    return quote(text, safe="")


class Handlers:
    """The REST routes over one :class:`~serving.dataplane.DataPlane`."""

    def __init__(self, plane: DataPlane, max_payload_bytes: int):
        self.plane = plane
        self.max_payload_bytes = max_payload_bytes

    @staticmethod
    def _payload(request: Request, body: bytes) -> tuple[Any, bytes]:
        """The body's JSON and its binary tensor section (``Inference-Header-Content-Length``)."""
        header, binary = split_binary(body, request.headers.get(HEADER_LENGTH))
        return protocol.decode_json(header), binary

    def _refused(self, exc: Exception, proto: str) -> Response:
        """A request refused before it reached the data plane, counted like those the data plane refuses."""
        if isinstance(exc, ClientDisconnect):
            error: ServingError = ClientClosed("client disconnected before its request body arrived")
        elif isinstance(exc, ServingError):
            error = exc
        else:
            error = self.plane.internal_error(exc)
        self.plane.failed(error, proto)
        return error_response(error)

    @staticmethod
    def _error(error: ServingError) -> Response:
        if isinstance(error, VersionGone):
            return error_response(error, f"{error.message}; retry without /versions/ to follow the alias")
        return error_response(error)

    async def v2_infer(self, request: Request) -> Response:
        received = time.perf_counter()
        try:
            # 413 before or while reading an oversized body
            payload, binary = self._payload(request, await read_body(request, self.max_payload_bytes))
            binary_output, outputs = protocol.requested_outputs(payload)
            explain = protocol.explain_requested(payload)
        except Exception as exc:  # ClientDisconnect included
            return self._refused(exc, V2)
        client_id = protocol.request_id(payload)
        # The id labels are joined by later (mlops feedback): the client's, else one made here.
        log_id = (
            str(client_id)
            if client_id is not None
            else request.headers.get(REQUEST_ID_HEADER) or self.plane.request_ids.new()
        )
        inputs = protocol.V2Inputs(payload, binary)
        try:
            answer = await self.plane.infer(
                InferRequest(request, inputs, V2, outputs, client_id, log_id, received, explain)
            )
        except ServingError as exc:
            return self._error(exc)
        content, header_length = protocol.v2_response(answer, binary_output)
        headers = {"x-model-version": answer.model_version, REQUEST_ID_HEADER: header_value(log_id)}
        if header_length is None:
            return Response(content, media_type=JSON, headers=headers)
        headers[HEADER_LENGTH] = str(header_length)
        return Response(content, media_type="application/octet-stream", headers=headers)

    async def v1_predict(self, request: Request) -> Response:
        return await self._v1(request, explain=False)

    async def v1_explain(self, request: Request) -> Response:
        """``:explain``: V1 instances answered with each row's score and reasons."""
        return await self._v1(request, explain=True)

    async def _v1(self, request: Request, explain: bool) -> Response:
        received = time.perf_counter()
        try:
            payload, _ = self._payload(request, await read_body(request, self.max_payload_bytes))
        except Exception as exc:  # ClientDisconnect included
            return self._refused(exc, V1)
        log_id = request.headers.get(REQUEST_ID_HEADER) or self.plane.request_ids.new()
        inputs = protocol.V1Inputs(payload)
        try:
            answer = await self.plane.infer(
                InferRequest(request, inputs, V1, (), None, log_id, received, explain)
            )
        except ServingError as exc:
            return self._error(exc)
        headers = {"x-model-version": answer.model_version, REQUEST_ID_HEADER: header_value(log_id)}
        content = (
            protocol.v1_explain_response(answer) if explain else protocol.v1_response(answer.probabilities)
        )
        return Response(content, media_type=JSON, headers=headers)

    async def live(self, request: Request) -> Response:
        return json_response({"live": self.plane.live()})

    async def ready(self, request: Request) -> Response:
        return json_response({"ready": self.plane.ready()})

    async def server_metadata(self, request: Request) -> Response:
        return json_response(self.plane.server_metadata())

    async def model_metadata(self, request: Request) -> Response:
        try:
            return json_response(self.plane.model_metadata(request))
        except ServingError as exc:
            return self._error(exc)

    async def model_ready(self, request: Request) -> Response:
        try:
            return json_response(self.plane.model_ready(request))
        except ServingError as exc:
            self.plane.failed(exc)
            return self._error(exc)

    async def v1_models(self, request: Request) -> Response:
        return json_response({"models": self.plane.models()})

    async def v1_model(self, request: Request) -> Response:
        try:
            status = self.plane.model_ready(request)
        except ServingError as exc:
            self.plane.failed(exc)
            return self._error(exc)
        return json_response({"name": status.name, "ready": status.ready})

    async def prometheus(self, request: Request) -> Response:
        return Response(self.plane.metrics.render(), media_type=CONTENT_TYPE)

    async def no_route(self, request: Request, exc: Exception) -> Response:
        """404/405 for paths and methods no route takes, pointing at the ones that exist."""
        name = self.plane.name
        message = (
            f"no route {request.method} {request.url.path}; see GET /v2/models/{name} (V2) "
            f"or POST /v1/models/{name}:predict (V1)"
        )
        error = MethodNotAllowed(message) if getattr(exc, "status_code", 404) == 405 else NotFound(message)
        self.plane.failed(error)
        return error_response(error)
