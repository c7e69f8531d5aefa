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

from starlette.responses import Response

from serving import protocol
from serving.batching import VersionGone
from serving.http import JSON, json_response, read_body
from serving.metrics import CONTENT_TYPE
from serving.protocol import ProtocolError, RowEncoder

if TYPE_CHECKING:
    from starlette.requests import Request

    from serving.config import ServerConfig
    from serving.metrics import ServingMetrics
    from serving.model_router import ModelRouter
    from serving.request_log import RequestLogger
    from serving.runtime import LoadedModel

log = logging.getLogger("serving")
REQUEST_ID_HEADER = "x-request-id"
"""The id a response carries and the request log keeps: the V2 body's ``id``, else this header, else a new one."""
REASONS = {400: "bad_request", 401: "unauthorized", 404: "not_found", 413: "payload_too_large"}


class Handlers:
    """Request handlers sharing one router, one metrics registry and (once started) one request log."""

    def __init__(self, config: ServerConfig, router: ModelRouter, metrics: ServingMetrics):
        self.config = config
        self.name = config.model_name
        self.router = router
        self.metrics = metrics
        self.request_log: RequestLogger | None = None
        """Set by the app's lifespan when request logging is on."""
        self._encoders: dict[str, RowEncoder] = {}

    @property
    def live_version(self) -> str:
        """The primary model's version: the label of metrics not tied to a scored request."""
        return self.router.primary.holder.current.version

    def encoder(self, model: LoadedModel) -> RowEncoder:
        """The named-feature encoder of ``model``, built once per model file."""
        encoder = self._encoders.get(model.sha256)
        if encoder is None:
            encoder = self._encoders[model.sha256] = RowEncoder(model.spec)
        return encoder

    def error(self, status: int, message: str, reason: str | None = None) -> Response:
        """A JSON error response, counted under ``reason`` (by default derived from the status)."""
        self.metrics.error(self.name, self.live_version, reason or REASONS.get(status, "client_error"))
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
            current = backend.holder.current
            payload = protocol.decode_json(await read_body(request, self.config.max_payload_bytes))
            if proto == "v2":
                x, request_id = protocol.parse_v2_infer(payload, current.n_features)
            else:
                x = protocol.parse_v1_predict(payload, current.n_features, self.encoder(current))
                request_id = None
            y, used = await backend.predict(x, version)
        except ProtocolError as exc:
            metrics.answered(name, self.live_version, proto, exc.status)
            return self.error(exc.status, exc.message)
        except VersionGone as exc:
            metrics.answered(name, self.live_version, proto, 404)
            return self.error(404, f"{exc}; retry without /versions/ to follow the alias")
        except Exception as exc:
            log.exception("inference failed")
            metrics.answered(name, self.live_version, proto, 500)
            return self.error(500, f"inference failed: {type(exc).__name__}: {exc}", "internal")
        # The id labels are joined by later (mlops feedback): the client's, else one made here.
        log_id = request_id or request.headers.get(REQUEST_ID_HEADER) or uuid.uuid4().hex
        if self.request_log is not None and len(x):
            self.request_log.record(used, x, y, log_id)
        body = (
            protocol.v2_response(name, used.version, y, request_id)
            if proto == "v2"
            else protocol.v1_response(y)
        )
        metrics.answered(name, used.version, proto, 200, time.perf_counter() - started)
        headers = {"x-model-version": used.version, REQUEST_ID_HEADER: log_id}
        return Response(body, media_type=JSON, headers=headers)

    async def live(self, request: Request) -> Response:
        return json_response({"live": True})

    async def ready(self, request: Request) -> Response:
        return json_response({"ready": True})

    async def server_metadata(self, request: Request) -> Response:
        return json_response({"name": "mlops-serving", "version": _package_version(), "extensions": []})

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


def _package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mlops")
    except PackageNotFoundError:
        return "unknown"
