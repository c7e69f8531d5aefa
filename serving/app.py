"""The ASGI app of the model server: wires the data plane, its REST face, the routing table and the lifecycle.

Built on Starlette + orjson rather than kserve's ModelServer: on the same model and
machine the lean stack answered several times more requests per second (numbers in
``serving/README.md``), and for a small tabular model the HTTP/JSON path, not ONNX
Runtime, sets the limit. The routes and payloads follow the protocols, so KServe
and Triton clients work unchanged.

The pieces: :mod:`serving.dataplane` (the protocol-neutral answers both transports give),
:mod:`serving.handlers` (REST's face: one method per route), :mod:`serving.routes` (the path
table), :mod:`serving.fast_path` (the inference routes answered in front of Starlette), :mod:`serving.grpc_service` (gRPC's face, started by the lifecycle with
``--grpc-port``), :mod:`serving.routing.model_router` (the
:class:`~serving.routing.model_router.ModelRouter` choosing which model answers),
:mod:`serving.backend` (a model's holder and batcher) and :mod:`serving.lifecycle` (what
runs beside the routes).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from starlette.applications import Starlette
from starlette.routing import Route

from serving.backend import ModelBackend
from serving.config import ServerConfig
from serving.dataplane import DataPlane
from serving.explanations import Explainer
from serving.fast_path import ScoringPath, ServingApp
from serving.handlers import Handlers
from serving.http import BearerAuth, admin_guard
from serving.lifecycle import ServerLifecycle
from serving.metrics import ServingMetrics
from serving.reload import ModelHolder
from serving.routes import route_table
from serving.routing.model_router import ModelRouter
from serving.routing.rollout_admin import admin_routes
from serving.routing.rollout_router import RolloutRouter
from serving.runtime import LoadedModel

log = logging.getLogger("serving")


def create_app(
    config: ServerConfig,
    model: LoadedModel,
    resolve: Callable[[], str] | None = None,
    load: Callable[[str], LoadedModel] | None = None,
    make_router: Callable[[ServerConfig, ModelBackend], ModelRouter] | None = None,
) -> Starlette:
    """The ASGI app serving ``model``: REST over :func:`create_plane`'s data plane (and gRPC with ``grpc_port``).

    ``resolve`` (the version the alias points at now) and ``load`` (fetch, verify and
    open a version) enable hot reload every ``config.reload_interval_s`` seconds.
    """
    plane = create_plane(config, model, load, make_router)
    handlers = Handlers(plane, config.max_payload_bytes)
    lifecycle = ServerLifecycle(config, plane, resolve, load)
    app = ServingApp(
        routes=route_table(handlers) + _admin(config, plane),
        lifespan=lifecycle.lifespan,
        exception_handlers={404: handlers.no_route, 405: handlers.no_route},
    )
    app.state.plane = plane
    if config.auth_token:
        app.add_middleware(BearerAuth, token=config.auth_token, on_reject=plane.failed)
    # The inference routes are answered in front of Starlette's stack, with the same checks and answers.
    app.scoring = ScoringPath(handlers, config.auth_token)
    return app


def _admin(config: ServerConfig, plane: DataPlane) -> list[Route]:
    """The rollout admin routes, when the router has a plan to change and ``config.rollout_admin`` is on."""
    router = plane.router
    if not config.rollout_admin or not isinstance(router, RolloutRouter):
        return []
    if not config.admin_token:
        log.warning(
            "the rollout admin route has no token of its own (loopback host %s): %s; set --admin-token-file",
            config.host,
            "the inference token guards it" if config.auth_token else "any local client can move traffic",
        )
    return admin_routes(router, admin_guard(config.admin_token, config.auth_token), plane.failed)


def create_plane(
    config: ServerConfig,
    model: LoadedModel,
    load: Callable[[str], LoadedModel] | None = None,
    make_router: Callable[[ServerConfig, ModelBackend], ModelRouter] | None = None,
) -> DataPlane:
    """The data plane serving ``model``, with its metrics, batching backend and router (not yet started).

    ``make_router`` builds the :class:`~serving.routing.model_router.ModelRouter` from the backend serving
    ``model``; by default a :class:`~serving.routing.rollout_router.RolloutRouter`, which answers like
    :class:`~serving.routing.model_router.AliasRouter` until a challenger is set through its admin route
    (``PUT /v2/models/<name>/rollout``, :mod:`serving.routing.rollout_admin`) and loads challengers
    with ``load``. The app's lifespan (:class:`~serving.lifecycle.ServerLifecycle`) starts and stops it.
    """
    metrics = ServingMetrics()
    metrics.served(model.name, model.version, model.sha256, model.precision)
    backend = ModelBackend(
        ModelHolder(model),
        config.max_batch_size,
        config.max_queue_delay_ms / 1000,
        config.inference_in_thread,
        on_batch=lambda used, rows: metrics.batch(used.name, used.version, rows),
    )
    router = (
        RolloutRouter(config, backend, metrics, load) if make_router is None else make_router(config, backend)
    )
    explainer = Explainer(config.explain_max_rows, config.explain_top_k, config.explain_reference_rows)
    plane = DataPlane(config.model_name, router, metrics, explainer)
    if config.features:
        from serving.entity_features import EntityLookup, LookupSettings

        settings = LookupSettings(
            config.feature_server,
            config.features,
            config.feature_entity,
            config.feature_max_age_s,
            config.feature_timeout_s,
        )
        plane.entities = EntityLookup(settings, metrics, config.model_name)
    return plane
