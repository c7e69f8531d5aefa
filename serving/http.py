"""HTTP plumbing shared by the REST routes: JSON and error responses, bearer-token auth, a bounded body read."""

from __future__ import annotations

import hmac
from collections.abc import Callable
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from serving.errors import Forbidden, PayloadTooLarge, ServingError, Unauthenticated, http_status

# Probes (kubelet, load balancers) cannot send a token: these paths never need one. The protocol
# groups model readiness (/v2/models/{name}[/versions/{v}]/ready) with them; see is_open().
OPEN_PATHS = frozenset({"/", "/v2/health/live", "/v2/health/ready"})
JSON = "application/json"


def json_response(content: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    body = content if isinstance(content, bytes) else orjson.dumps(content)
    return Response(body, status_code=status, media_type=JSON, headers=headers)


def error_body(message: str) -> bytes:
    """REST's error body, ``{"error": message}``."""
    return orjson.dumps({"error": message})


def error_response(error: ServingError, message: str | None = None) -> Response:
    """``{"error": message}`` with the status :data:`~serving.errors.HTTP_STATUS` gives ``error``'s class."""
    status = http_status(error)
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return json_response(error_body(error.message if message is None else message), status, headers)


def is_open(path: str) -> bool:
    """Whether ``path`` is a health check (liveness, readiness, model readiness): never needs a token."""
    return path in OPEN_PATHS or (path.startswith("/v2/models/") and path.endswith("/ready"))


def is_admin(path: str) -> bool:
    """Whether ``path`` is the rollout admin route (``/v2/models/{name}/rollout``): it checks its own token."""
    return path.startswith("/v2/models/") and path.endswith("/rollout")


def bearer_matches(supplied: bytes, token: bytes) -> bool:
    """``Authorization: Bearer <token>``, the scheme compared case-insensitively (RFC 7235), in constant time."""
    scheme, _, credentials = supplied.partition(b" ")
    return scheme.lower() == b"bearer" and hmac.compare_digest(credentials.strip(b" "), token)


class BearerAuth:
    """ASGI middleware: 401 unless ``Authorization: Bearer <token>``; health checks stay open.

    The rollout admin route is left to its own check (:func:`admin_guard`): with an admin token
    the inference token must not open it, and without one it falls back to this token.
    """

    def __init__(self, app: ASGIApp, token: str, on_reject: Callable[[ServingError], None]):
        self.app = app
        self.token = token.encode()
        self.on_reject = on_reject

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or is_open(scope["path"]) or is_admin(scope["path"]):
            await self.app(scope, receive, send)
            return
        supplied = dict(scope["headers"]).get(b"authorization", b"")
        if bearer_matches(supplied, self.token):
            await self.app(scope, receive, send)
            return
        what = "missing" if not supplied else "invalid"
        error = Unauthenticated(f"{what} bearer token; send 'Authorization: Bearer <token>'")
        self.on_reject(error)
        await error_response(error)(scope, receive, send)


def admin_guard(admin_token: str, auth_token: str) -> Callable[[bytes], None]:
    """The rollout admin route's credential check on the ``Authorization`` header's value.

    With ``admin_token``, only it opens the route: the inference token gets 403 (a valid credential,
    not for this), anything else 401. Without one (allowed on a loopback host only, see
    :class:`~serving.config.ServerConfig`), the inference token guards it as it guards every route.
    """
    admin, inference = admin_token.encode(), auth_token.encode()
    token = admin or inference

    def check(supplied: bytes) -> None:
        if not token or bearer_matches(supplied, token):
            return
        if admin and inference and bearer_matches(supplied, inference):
            raise Forbidden(
                "the rollout admin route needs the admin token (--admin-token-file); the inference token "
                "does not open it"
            )
        what = "missing" if not supplied else "invalid"
        which = "admin token" if admin else "bearer token"
        raise Unauthenticated(f"{what} {which}; send 'Authorization: Bearer <{which}>'")

    return check


async def read_body(request: Request, limit: int) -> bytes:
    """The body, refusing (413) anything over ``limit`` bytes before or while reading it."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isascii() and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(f"request body of {declared} bytes exceeds the limit of {limit} bytes")
    if declared is not None:
        return await request.body()
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(f"request body exceeds the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)
