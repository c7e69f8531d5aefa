"""The route handlers: KServe V2 Open Inference Protocol, V1 predict, health, metadata and /metrics.

One :class:`Handlers` object per app holds what the routes share (the router that
picks the answering model, metrics, the request log) and has one method per route,
so each route reads on its own and a new route or protocol is one more method.
The inference path is the measured hot path: orjson in, orjson out, one await for
the model, no per-request objects beyond the parsed matrix and the response.
"""

from __future__ import annotations

import logging
import time
import uuid
from typing import TYPE_CHECKING

import numpy as np
from starlette.requests import ClientDisconnect
from starlette.responses import Response

from serving import protocol
from serving.batching import VersionGone
from serving.http import JSON, json_response, read_body
from serving.metrics import CONTENT_TYPE
from serving.protocol import ProtocolError, RowEncoder
from serving.tensors import BINARY_EXTENSION, HEADER_LENGTH, FeatureBounds, split_binary

if TYPE_CHECKING:
    from starlette.requests import Request

    from serving.config import ServerConfig
    from serving.metrics import ServingMetrics
    from serving.request_log import RequestLogger
    from serving.routing.model_router import ModelRouter, Scorer
    from serving.runtime import LoadedModel

log = logging.getLogger("serving")
REQUEST_ID_HEADER = "x-request-id"
"""The id a response carries and the request log keeps: the V2 body's ``id``, else this header, else a new one."""
REASONS = {
    400: "bad_request",
    401: "unauthorized",
    404: "not_found",
    413: "payload_too_large",
    499: "client_closed",
}
CLIENT_CLOSED = 499
"""Counted (nginx's code) when a client disconnects before its request body arrived; nobody is answered."""
EXTENSIONS = [BINARY_EXTENSION]


class Handlers:
    """Request handlers sharing one router, one metrics registry and (once started) one request log."""

    def __init__(self, config: ServerConfig, router: ModelRouter, metrics: ServingMetrics):
        self.config = config
        self.name = config.model_name
        self.router = router
        self.metrics = metrics
        self.request_log: RequestLogger | None = None
        """Set by the app's lifespan when request logging is on."""
        self._inputs: dict[str, tuple[RowEncoder, FeatureBounds]] = {}

    @property
    def live_version(self) -> str:
        """The primary model's version: the label of metrics not tied to a scored request."""
        return self.router.primary.holder.current.version

    def inputs(self, model: LoadedModel) -> tuple[RowEncoder, FeatureBounds]:
        """The named-feature encoder and the input bounds of ``model``, built once per model file."""
        found = self._inputs.get(model.sha256)
        if found is None:
            found = self._inputs[model.sha256] = (RowEncoder(model.spec), FeatureBounds(model.spec))
        return found

    async def score(
        self, backend: Scorer, version: str | None, x: np.ndarray, request_id: str = ""
    ) -> tuple[np.ndarray, LoadedModel]:
        """Probabilities for an admitted matrix (batched), checked finite, and logged; every protocol ends here."""
        y, used = await backend.predict(x, version)
        if len(y) and not np.isfinite(y).all():
            row = int(np.flatnonzero(~np.isfinite(y))[0])
            raise ProtocolError(
                400,
                f"the model produced no finite probability for row {row}: its values lie far outside "
                "anything it was trained on; check the row's units and scale",
            )
        if self.request_log is not None and len(x):
            self.request_log.record(used, x, y, request_id)
        return y, used

    @staticmethod
    def reason(status: int) -> str:
        """The ``reason`` label of the error metric for an HTTP status."""
        return REASONS.get(status, "internal" if status >= 500 else "client_error")

    def error(self, status: int, message: str, reason: str | None = None) -> Response:
        """A JSON error response, counted under ``reason`` (by default derived from the status)."""
        self.metrics.error(self.name, self.live_version, reason or self.reason(status))
        return json_response(protocol.error_body(message), status=status)

    async def v2_infer(self, request: Request) -> Response:
        return await self._infer(request, "v2")

    async def v1_predict(self, request: Request) -> Response:
        return await self._infer(request, "v1")

    async def _infer(self, request: Request, proto: str) -> Response:
        started = time.perf_counter()
        name, metrics = self.name, self.metrics
        try:
            backend, version = self.router.select(request)
            encoder, bounds = self.inputs(backend.holder.current)
            body = await read_body(request, self.config.max_payload_bytes)
            header, binary = split_binary(body, request.headers.get(HEADER_LENGTH))
            payload = protocol.decode_json(header)
            if proto == "v2":
                parsed = protocol.parse_v2_infer(payload, bounds, binary)
                x, client_id = parsed.x, parsed.request_id
            else:
                x, client_id = protocol.parse_v1_predict(payload, bounds, encoder), None
            # The id labels are joined by later (mlops feedback): the client's, else one made here.
            header_id = request.headers.get(REQUEST_ID_HEADER) or uuid.uuid4().hex
            log_id = str(client_id) if client_id is not None else header_id
            y, used = await self.score(backend, version, x, log_id)
        except ProtocolError as exc:
            metrics.answered(name, self.live_version, proto, exc.status)
            return self.error(exc.status, exc.message)
        except VersionGone as exc:
            metrics.answered(name, self.live_version, proto, 404)
            return self.error(404, f"{exc}; retry without /versions/ to follow the alias")
        except ClientDisconnect:
            metrics.answered(name, self.live_version, proto, CLIENT_CLOSED)
            return self.error(CLIENT_CLOSED, "client disconnected before its request body arrived")
        except Exception as exc:
            log.exception("inference failed")
            metrics.answered(name, self.live_version, proto, 500)
            return self.error(500, f"inference failed: {type(exc).__name__}: {exc}", "internal")
        headers = {"x-model-version": used.version, REQUEST_ID_HEADER: log_id}
        if proto == "v1":
            content = protocol.v1_response(y)
        else:
            content, header_length = protocol.v2_response(name, used.version, y, parsed)
            if header_length is not None:
                headers[HEADER_LENGTH] = str(header_length)
                metrics.answered(name, used.version, proto, 200, time.perf_counter() - started)
                return Response(content, media_type="application/octet-stream", headers=headers)
        metrics.answered(name, used.version, proto, 200, time.perf_counter() - started)
        return Response(content, media_type=JSON, headers=headers)

    async def live(self, request: Request) -> Response:
        return json_response({"live": True})

    async def ready(self, request: Request) -> Response:
        return json_response({"ready": True})

    async def server_metadata(self, request: Request) -> Response:
        return json_response(
            {"name": "mlops-serving", "version": package_version(), "extensions": EXTENSIONS}
        )

    async def model_metadata(self, request: Request) -> Response:
        try:
            backend, _ = self.router.select(request)
        except ProtocolError as exc:
            return self.error(exc.status, exc.message)
        current = backend.holder.current
        return json_response(
            protocol.model_metadata(self.name, current.version, current.spec, current.precision)
        )

    async def model_ready(self, request: Request) -> Response:
        try:
            backend, _ = self.router.select(request)
        except ProtocolError as exc:
            return self.error(exc.status, exc.message)
        return json_response({"name": self.name, "version": backend.holder.current.version, "ready": True})

    async def v1_models(self, request: Request) -> Response:
        return json_response({"models": [self.name]})

    async def v1_model(self, request: Request) -> Response:
        try:
            self.router.select(request)
        except ProtocolError as exc:
            return self.error(exc.status, exc.message)
        return json_response({"name": self.name, "ready": True})

    async def prometheus(self, request: Request) -> Response:
        return Response(self.metrics.render(), media_type=CONTENT_TYPE)

    async def no_route(self, request: Request, exc: Exception) -> Response:
        """404/405 for paths and methods no route takes, pointing at the ones that exist."""
        status = getattr(exc, "status_code", 404)
        message = (
            f"no route {request.method} {request.url.path}; see GET /v2/models/{self.name} (V2) "
            f"or POST /v1/models/{self.name}:predict (V1)"
        )
        return self.error(status, message)


def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mlops")
    except PackageNotFoundError:
        return "unknown"
