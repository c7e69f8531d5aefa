"""The admin route a rollout drives the server through: ``GET|PUT /v2/models/<name>/rollout``.

``GET`` answers the live plan (champion version, challenger, percent, shadow). ``PUT``
with a JSON :class:`~serving.routing.rollout_router.TrafficPlan` changes it without a restart:
the challenger is fetched from the registry, its digest checked and its input contract
compared with the champion's before it takes any traffic. The route has a credential of its
own (``--admin-token-file``, :func:`serving.http.admin_guard`): the inference token does not
open it, and a server on a non-loopback host refuses to start with the route and no admin token.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import orjson
from pydantic import ValidationError
from starlette.routing import Route

from serving.errors import InvalidInput, ModelNotFound, ServingError
from serving.http import error_response, json_response
from serving.routing.rollout_router import TrafficPlan

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from serving.routing.rollout_router import RolloutRouter

ROLLOUT_PATH = "/v2/models/{name}/rollout"


def admin_routes(
    router: RolloutRouter,
    authorize: Callable[[bytes], None],
    on_reject: Callable[[ServingError], None],
) -> list[Route]:
    """The GET and PUT routes of ``router``'s traffic plan; ``authorize`` checks the Authorization header."""

    def describe() -> dict[str, object]:
        return {
            "name": router.name,
            "champion": router.primary.holder.current.version,
            **router.plan.model_dump(),
        }

    def check_name(request: Request) -> None:
        try:
            authorize(request.headers.get("authorization", "").encode("latin-1"))
        except ServingError as exc:
            on_reject(exc)
            raise
        if request.path_params["name"] != router.name:
            raise ModelNotFound(
                f"model {request.path_params['name']!r} is not served here ({router.name!r} is)"
            )

    async def get(request: Request) -> Response:
        try:
            check_name(request)
        except ServingError as exc:
            return error_response(exc)
        return json_response(describe())

    async def put(request: Request) -> Response:
        try:
            check_name(request)
            try:
                plan = TrafficPlan.model_validate(orjson.loads(await request.body()))
            except (orjson.JSONDecodeError, ValidationError) as exc:
                raise InvalidInput(
                    f"bad rollout plan: {exc}; send e.g. {{'challenger': '2', 'percent': 10}}"
                ) from exc
            await router.apply(plan)
        except ServingError as exc:
            return error_response(exc)
        return json_response(describe())

    return [Route(ROLLOUT_PATH, get, methods=["GET"]), Route(ROLLOUT_PATH, put, methods=["PUT"])]
