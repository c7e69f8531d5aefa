"""The REST path table: which handler method answers which route, in the order Starlette tries them.

Which *model* answers is not decided here but per request by the data plane's
:class:`~serving.routing.model_router.ModelRouter`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.routing import Route

if TYPE_CHECKING:
    from serving.handlers import Handlers


def route_table(handlers: Handlers) -> list[Route]:
    """The Starlette routes; the router tries them in order, so inference comes first."""
    return [
        Route("/v2/models/{name}/infer", handlers.v2_infer, methods=["POST"]),
        Route("/v1/models/{name}:predict", handlers.v1_predict, methods=["POST"]),
        Route("/v1/models/{name}:explain", handlers.v1_explain, methods=["POST"]),
        Route("/v2/models/{name}/versions/{version}/infer", handlers.v2_infer, methods=["POST"]),
        Route("/", handlers.live),
        Route("/v2/health/live", handlers.live),
        Route("/v2/health/ready", handlers.ready),
        Route("/v2", handlers.server_metadata),
        Route("/v2/models/{name}", handlers.model_metadata),
        Route("/v2/models/{name}/ready", handlers.model_ready),
        Route("/v2/models/{name}/versions/{version}", handlers.model_metadata),
        Route("/v2/models/{name}/versions/{version}/ready", handlers.model_ready),
        Route("/v1/models", handlers.v1_models),
        Route("/v1/models/{name}", handlers.v1_model),
        Route("/metrics", handlers.prometheus),
    ]
