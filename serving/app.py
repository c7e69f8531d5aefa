"""HTTP routes: KServe V2 Open Inference Protocol, V1 predict, health, metadata and /metrics.

Built on Starlette + orjson rather than kserve's ModelServer: on the same model and
machine the lean stack answered several times more requests per second (numbers in
``serving/README.md``), and for a small tabular model the HTTP/JSON path, not ONNX
Runtime, sets the limit. The routes and payloads follow the protocols, so KServe
and Triton clients work unchanged.
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import numpy as np
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from serving import protocol
from serving.batching import Batcher, VersionGone
from serving.config import ServerConfig
from serving.http import JSON, BearerAuth, json_response, read_body
from serving.metrics import CONTENT_TYPE, ServingMetrics
from serving.protocol import ProtocolError, RowEncoder
from serving.reload import ModelHolder, ReloadWatcher
from serving.request_log import RequestLogger
from serving.runtime import LoadedModel

log = logging.getLogger("serving")
REASONS = {400: "bad_request", 401: "unauthorized", 404: "not_found", 413: "payload_too_large"}


@dataclass
class ServerState:
    """What the routes share; built once per app."""

    config: ServerConfig
    holder: ModelHolder
    metrics: ServingMetrics
    batcher: Batcher | None = None
    request_log: RequestLogger | None = None
    watcher: ReloadWatcher | None = None
    encoders: dict[str, RowEncoder] = field(default_factory=dict)

    def encoder(self, model: LoadedModel) -> RowEncoder:
        encoder = self.encoders.get(model.sha256)
        if encoder is None:
            encoder = self.encoders[model.sha256] = RowEncoder(model.spec)
        return encoder


def create_app(
    config: ServerConfig,
    model: LoadedModel,
    resolve: Callable[[], str] | None = None,
    load: Callable[[str], LoadedModel] | None = None,
) -> Starlette:
    """The ASGI app serving ``model``.

    ``resolve`` (the version the alias points at now) and ``load`` (fetch, verify and
    open a version) enable hot reload every ``config.reload_interval_s`` seconds.
    """
    state = ServerState(config=config, holder=ModelHolder(model), metrics=ServingMetrics())
    metrics = state.metrics
    metrics.served(model.name, model.version, model.sha256, model.precision)
    name = config.model_name

    def reloaded(outcome: str, version: str) -> None:
        metrics.reloads.labels(name, outcome).inc()
        if outcome == "swapped":
            # The new version's long-lived objects join those frozen at start (see server.serve).
            gc.collect()
            gc.freeze()
            current = state.holder.current
            metrics.served(name, current.version, current.sha256, current.precision, retired[-1])
            retired.append((current.version, current.sha256, current.precision))

    retired = [(model.version, model.sha256, model.precision)]

    def observe_batch(used: LoadedModel, rows: int) -> None:
        metrics.batch(used.name, used.version, rows)

    def error(status: int, message: str, reason: str | None = None) -> Response:
        current = state.holder.current
        metrics.error(name, current.version, reason or REASONS.get(status, "client_error"))
        return json_response(protocol.error_body(message), status=status)

    def check_served(request: Request) -> tuple[LoadedModel, str | None]:
        """The served model if the path names it (and its version, when pinned), else a 404."""
        current = state.holder.current
        requested = request.path_params["name"]
        if requested != name:
            raise ProtocolError(
                404,
                f"model {requested!r} is not served here; this server serves {name!r} ({config.model_uri})",
            )
        version = request.path_params.get("version")
        if version is not None and version != current.version:
            raise ProtocolError(
                404,
                f"{name} version {version!r} is not loaded; this server serves version {current.version} "
                f"({config.model_uri}); drop /versions/{version} to follow the alias",
            )
        return current, version

    async def predict(x: np.ndarray, version: str | None) -> tuple[np.ndarray, LoadedModel]:
        if len(x) == 0:
            return np.empty((0,), dtype=np.float32), state.holder.current
        if state.batcher is not None:
            return await state.batcher.submit(x, version)
        current = state.holder.current
        y = current.predict(x)
        observe_batch(current, len(x))
        return y, current

    async def infer(request: Request, proto: str) -> Response:
        started = time.perf_counter()
        try:
            current, version = check_served(request)
            payload = protocol.decode_json(await read_body(request, config.max_payload_bytes))
            if proto == "v2":
                x, request_id = protocol.parse_v2_infer(payload, current.n_features)
            else:
                x, request_id = (
                    protocol.parse_v1_predict(payload, current.n_features, state.encoder(current)),
                    None,
                )
            y, used = await predict(x, version)
        except ProtocolError as exc:
            metrics.answered(name, state.holder.current.version, proto, exc.status)
            return error(exc.status, exc.message)
        except VersionGone as exc:
            metrics.answered(name, state.holder.current.version, proto, 404)
            return error(404, f"{exc}; retry without /versions/ to follow the alias")
        except Exception as exc:
            log.exception("inference failed")
            metrics.answered(name, state.holder.current.version, proto, 500)
            return error(500, f"inference failed: {type(exc).__name__}: {exc}", "internal")
        if state.request_log is not None and len(x):
            state.request_log.record(used, x, y)
        body = (
            protocol.v2_response(name, used.version, y, request_id)
            if proto == "v2"
            else protocol.v1_response(y)
        )
        metrics.answered(name, used.version, proto, 200, time.perf_counter() - started)
        return Response(body, media_type=JSON, headers={"x-model-version": used.version})

    async def v2_infer(request: Request) -> Response:
        return await infer(request, "v2")

    async def v1_predict(request: Request) -> Response:
        return await infer(request, "v1")

    async def live(request: Request) -> Response:
        return json_response({"live": True})

    async def ready(request: Request) -> Response:
        return json_response({"ready": True})

    async def server_metadata(request: Request) -> Response:
        return json_response({"name": "mlops-serving", "version": _package_version(), "extensions": []})

    async def metadata(request: Request) -> Response:
        try:
            current, _ = check_served(request)
        except ProtocolError as exc:
            return error(exc.status, exc.message)
        return json_response(protocol.model_metadata(name, current.version, current.spec, current.precision))

    async def model_ready(request: Request) -> Response:
        try:
            current, _ = check_served(request)
        except ProtocolError as exc:
            return error(exc.status, exc.message)
        return json_response({"name": name, "version": current.version, "ready": True})

    async def v1_models(request: Request) -> Response:
        return json_response({"models": [name]})

    async def v1_model(request: Request) -> Response:
        try:
            check_served(request)
        except ProtocolError as exc:
            return error(exc.status, exc.message)
        return json_response({"name": name, "ready": True})

    async def prometheus(request: Request) -> Response:
        return Response(metrics.render(), media_type=CONTENT_TYPE)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if config.max_batch_size > 1:
            state.batcher = Batcher(
                state.holder,
                config.max_batch_size,
                config.max_queue_delay_ms / 1000,
                config.inference_in_thread,
                on_batch=observe_batch,
            )
            state.batcher.start()
        if config.request_log_uri:
            state.request_log = RequestLogger(
                config.request_log_uri,
                name,
                config.request_log_sample_rate,
                config.request_log_flush_s,
                config.request_log_max_rows,
                on_error=lambda exc: metrics.error(name, state.holder.current.version, "request_log"),
            )
            state.request_log.start()
        if resolve is not None and load is not None and config.reload_interval_s > 0:
            state.watcher = ReloadWatcher(
                state.holder, resolve, load, config.reload_interval_s, on_outcome=reloaded
            )
            state.watcher.start()
        try:
            yield
        finally:
            if state.watcher is not None:
                await state.watcher.stop()
            if state.batcher is not None:
                await state.batcher.stop()
            if state.request_log is not None:
                await state.request_log.stop()

    routes = [  # the router tries routes in order: inference first
        Route("/v2/models/{name}/infer", v2_infer, methods=["POST"]),
        Route("/v1/models/{name}:predict", v1_predict, methods=["POST"]),
        Route("/v2/models/{name}/versions/{version}/infer", v2_infer, methods=["POST"]),
        Route("/", live),
        Route("/v2/health/live", live),
        Route("/v2/health/ready", ready),
        Route("/v2", server_metadata),
        Route("/v2/models/{name}", metadata),
        Route("/v2/models/{name}/ready", model_ready),
        Route("/v2/models/{name}/versions/{version}", metadata),
        Route("/v2/models/{name}/versions/{version}/ready", model_ready),
        Route("/v1/models", v1_models),
        Route("/v1/models/{name}", v1_model),
        Route("/metrics", prometheus),
    ]

    async def not_found(request: Request, exc: Exception) -> Response:
        status = getattr(exc, "status_code", 404)
        message = (
            f"no route {request.method} {request.url.path}; see GET /v2/models/{name} (V2) "
            f"or POST /v1/models/{name}:predict (V1)"
        )
        return error(status, message)

    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={404: not_found, 405: not_found})
    app.state.server = state
    if config.auth_token:
        app.add_middleware(
            BearerAuth,
            token=config.auth_token,
            on_reject=lambda: metrics.error(name, state.holder.current.version, "unauthorized"),
        )
    return app


def _package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mlops")
    except PackageNotFoundError:
        return "unknown"
