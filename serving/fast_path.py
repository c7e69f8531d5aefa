"""The scoring routes as raw ASGI, in front of the Starlette app: the same answers at a fraction of its cost.

On single-row requests the framework's per-request machinery (its error middlewares, the router
trying each route's regex, the ``Request`` and ``Response`` objects, the header mappings) cost
about as much CPU as the scoring itself. :class:`ServingApp` is the Starlette app with one
check in front: a ``POST`` whose path is one of the inference routes (V2 ``infer``, with or
without a version, V1 ``:predict`` and ``:explain``) is answered here, directly on the ASGI
messages; every other request goes to the Starlette app unchanged (health, metadata,
``/metrics``, the rollout admin route, 404s and 405s).

Nothing of the contract changes on this path: the bearer token is checked exactly as
:class:`~serving.http.BearerAuth` checks it (the last ``Authorization`` header, counted
``unauthorized``, ``WWW-Authenticate: Bearer``), the body is read with the same 413 limits and
client-disconnect handling as :func:`~serving.http.read_body`, the request goes through the same
:meth:`~serving.dataplane.DataPlane.infer` (metrics, request log, router) and the response
carries the same status, body and headers, in the order Starlette's ``Response`` writes them.
Errors are answered by the very functions the Starlette handlers use.

:meth:`ScoringPath.answer` is the transport's half left out: it takes the request's headers and a
way to read its body, and returns the :class:`Reply` to write. :class:`ServingApp` reads and writes
ASGI messages around it; on granian, :class:`~serving.rsgi.AsgiOnRsgi` calls it on the RSGI protocol
object directly, so a scoring request never becomes ASGI messages there.

The path also keeps the server's in-flight count (:class:`~serving.batching.InFlight`): a request
that is alone is scored without the batcher's hand-off (:mod:`serving.batching`).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import orjson
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.requests import ClientDisconnect

from mlops.model.onnx_model import OUTPUT_NAME
from serving import protocol
from serving.dataplane import InferRequest
from serving.errors import PayloadTooLarge, ServingError, Unauthenticated
from serving.handlers import REQUEST_ID_HEADER, V1, V2, header_value
from serving.http import bearer_matches, error_response
from serving.tensors import HEADER_LENGTH, split_binary

if TYPE_CHECKING:
    from starlette.responses import Response
    from starlette.types import Receive, Scope, Send

    from serving.dataplane import DataPlane, InferResponse
    from serving.handlers import Handlers

V2_PREFIX = "/v2/models/"
V1_PREFIX = "/v1/models/"
PREDICT, EXPLAIN = ":predict", ":explain"
JSON_TYPE = (b"content-type", b"application/json")
BINARY_TYPE = (b"content-type", b"application/octet-stream")
_HEADER_LENGTH = HEADER_LENGTH.lower().encode()
_REQUEST_ID = REQUEST_ID_HEADER.encode()


Route = tuple[str, dict[str, str], bool]
"""What :func:`match` finds: the protocol, the path parameters and whether it is V1 ``:explain``."""
BodyReader = Callable[[bytes | None], Awaitable[bytes]]
"""Reads the request's body given its declared ``content-length`` (None: not declared), raising
:class:`~serving.errors.PayloadTooLarge` over the limit and ``ClientDisconnect`` when the client went away."""


class Reply:
    """A response as the scoring path answers it: status, headers in the order Starlette writes them
    (``content-length`` included), body."""

    __slots__ = ("body", "headers", "status")

    def __init__(self, status: int, headers: list[tuple[bytes, bytes]], body: bytes):
        self.status = status
        self.headers = headers
        self.body = body

    @classmethod
    def of(cls, response: Response) -> Reply:
        """What Starlette's ``response`` would write (the error answers the handlers build)."""
        return cls(response.status_code, response.raw_headers, bytes(response.body))


def refuse_oversized(declared: bytes | None, limit: int) -> None:
    """:func:`~serving.http.read_body`'s first check: 413 for a declared length over ``limit``, before reading."""
    if declared is not None:
        text = declared.decode("latin-1")
        if text.isascii() and text.isdigit() and int(text) > limit:
            raise PayloadTooLarge(f"request body of {text} bytes exceeds the limit of {limit} bytes")


def match(path: str) -> Route | None:
    """The inference route ``path`` names, as Starlette's path table would match it: the protocol
    (``v2``/``v1``), the path parameters and whether it is V1 ``:explain``; None for any other path.

    A ``{name}`` or ``{version}`` is one or more characters without ``/``, as Starlette's default
    convertor reads it.
    """
    if path.startswith(V2_PREFIX) and path.endswith("/infer"):
        parts = path[len(V2_PREFIX) : -len("/infer")].split("/")
        if len(parts) == 1 and parts[0]:
            return V2, {"name": parts[0]}, False
        if len(parts) == 3 and parts[0] and parts[1] == "versions" and parts[2]:
            return V2, {"name": parts[0], "version": parts[2]}, False
        return None
    if path.startswith(V1_PREFIX):
        rest = path[len(V1_PREFIX) :]
        if "/" in rest:
            return None
        if rest.endswith(PREDICT) and len(rest) > len(PREDICT):
            return V1, {"name": rest[: -len(PREDICT)]}, False
        if rest.endswith(EXPLAIN) and len(rest) > len(EXPLAIN):
            return V1, {"name": rest[: -len(EXPLAIN)]}, True
    return None


class FastTarget:
    """What the router reads (:class:`~serving.routing.model_router.Target`): the path parameters, and the
    headers, made into a mapping only when a router asks for them (a rollout split's request key)."""

    __slots__ = ("_headers", "_raw", "path_params")

    def __init__(self, path_params: dict[str, str], raw: list[tuple[bytes, bytes]]):
        self.path_params = path_params
        self._raw = raw
        self._headers: Headers | None = None

    @property
    def headers(self) -> Headers:
        if self._headers is None:
            self._headers = Headers(raw=self._raw)
        return self._headers


class _Head:
    """What :meth:`ScoringPath.answer` read before the body, handed to the protocol's handler as one."""

    __slots__ = ("declared", "header_length", "received", "request_id", "target")

    def __init__(
        self,
        target: FastTarget,
        declared: bytes | None,
        header_length: bytes | None,
        request_id: bytes | None,
        received: float,
    ):
        self.target = target
        self.declared = declared
        self.header_length = header_length
        self.request_id = request_id
        self.received = received

    def log_id(self, plane: DataPlane) -> str:
        """The request's ``X-Request-ID`` header, else a new id."""
        return (self.request_id.decode("latin-1") if self.request_id else None) or plane.request_ids.new()


class ScoringPath:
    """Answers the inference routes on raw ASGI messages, over the same data plane and handlers."""

    def __init__(self, handlers: Handlers, auth_token: str):
        self.handlers = handlers
        self.plane = handlers.plane
        self.limit = handlers.max_payload_bytes
        self.token = auth_token.encode()
        self._versions: dict[str, bytes] = {}
        self._prefixes: dict[tuple[str, str], bytes] = {}

    async def answer(self, route: Route, raw: list[tuple[bytes, bytes]], read: BodyReader) -> Reply:
        """The reply to the inference request ``route`` names, with headers ``raw`` and its body from ``read``."""
        received = time.perf_counter()
        supplied = b""
        declared = header_length = request_id = None
        for (
            key,
            value,
        ) in raw:  # the first of each, as Headers.get reads it; the last Authorization, as dict() does
            if key == b"authorization":
                supplied = value
            elif key == b"content-length":
                if declared is None:
                    declared = value
            elif key == _HEADER_LENGTH:
                if header_length is None:
                    header_length = value
            elif key == _REQUEST_ID and request_id is None:
                request_id = value
        if self.token and not bearer_matches(supplied, self.token):
            what = "missing" if not supplied else "invalid"
            error = Unauthenticated(f"{what} bearer token; send 'Authorization: Bearer <token>'")
            self.plane.failed(error)
            return Reply.of(error_response(error))
        with self.plane.in_flight.request():
            proto, params, explain = route
            head = _Head(FastTarget(params, raw), declared, header_length, request_id, received)
            if proto == V2:
                return await self._v2(read, head)
            return await self._v1(read, head, explain)

    async def read_asgi(self, receive: Receive, declared: bytes | None) -> bytes:
        """:func:`~serving.http.read_body` on the ASGI messages: 413 before or while reading an oversized body."""
        limit = self.limit
        refuse_oversized(declared, limit)
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            kind = message["type"]
            if kind == "http.request":
                chunk = message.get("body", b"")
                if chunk:
                    size += len(chunk)
                    if declared is None and size > limit:
                        raise PayloadTooLarge(f"request body exceeds the limit of {limit} bytes")
                    chunks.append(chunk)
                if not message.get("more_body", False):
                    break
            elif kind == "http.disconnect":
                raise ClientDisconnect()
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def _v2_json(self, answer: InferResponse) -> bytes:
        """:func:`~serving.protocol.v2_response`'s JSON body, byte for byte, its fixed part encoded once per version."""
        key = (answer.model_name, answer.model_version)
        prefix = self._prefixes.get(key)
        if prefix is None:
            prefix = self._prefixes[key] = (
                b'{"model_name":'
                + orjson.dumps(answer.model_name)
                + b',"model_version":'
                + orjson.dumps(answer.model_version)
                + b',"outputs":[{"name":'
                + orjson.dumps(OUTPUT_NAME)
                + b',"datatype":"FP32","shape":['
            )
        y = answer.probabilities
        data = orjson.dumps(y, option=orjson.OPT_SERIALIZE_NUMPY)
        end = b"}]}" if answer.id is None else b'}],"id":' + orjson.dumps(answer.id) + b"}"
        return b"".join((prefix, str(len(y)).encode(), b'],"data":', data, end))

    def _version(self, version: str) -> bytes:
        encoded = self._versions.get(version)
        if encoded is None:
            encoded = self._versions[version] = version.encode("latin-1")
        return encoded

    async def _v2(self, read: BodyReader, head: _Head) -> Reply:
        try:
            body = await read(head.declared)
            length = head.header_length
            header, binary = split_binary(body, None if length is None else length.decode("latin-1"))
            payload = protocol.decode_json(header)
            binary_output, outputs = protocol.requested_outputs(payload)
            explain = protocol.explain_requested(payload)
        except Exception as exc:  # ClientDisconnect included
            return Reply.of(self.handlers._refused(exc, V2))
        client_id = protocol.request_id(payload)
        log_id = str(client_id) if client_id is not None else head.log_id(self.plane)
        inputs = protocol.V2Inputs(payload, binary)
        request = InferRequest(head.target, inputs, V2, outputs, client_id, log_id, head.received, explain)
        try:
            answer = await self.plane.infer(request)
        except ServingError as exc:
            return Reply.of(self.handlers._error(exc))
        if binary_output or answer.reasons is not None:
            content, json_length = protocol.v2_response(answer, binary_output)
        else:
            content, json_length = self._v2_json(answer), None
        if json_length is None:
            return self._ok(answer, log_id, content, JSON_TYPE)
        length_header = (_HEADER_LENGTH, str(json_length).encode())
        return self._ok(answer, log_id, content, BINARY_TYPE, length_header)

    async def _v1(self, read: BodyReader, head: _Head, explain: bool) -> Reply:
        try:
            payload = protocol.decode_json(await read(head.declared))
        except Exception as exc:  # ClientDisconnect included
            return Reply.of(self.handlers._refused(exc, V1))
        log_id = head.log_id(self.plane)
        inputs = protocol.V1Inputs(payload)
        request = InferRequest(head.target, inputs, V1, (), None, log_id, head.received, explain)
        try:
            answer = await self.plane.infer(request)
        except ServingError as exc:
            return Reply.of(self.handlers._error(exc))
        content = (
            protocol.v1_explain_response(answer) if explain else protocol.v1_response(answer.probabilities)
        )
        return self._ok(answer, log_id, content, JSON_TYPE)

    def _ok(
        self,
        answer: InferResponse,
        log_id: str,
        content: bytes,
        content_type: tuple[bytes, bytes],
        *extra: tuple[bytes, bytes],
    ) -> Reply:
        """A 200 with ``content``: the headers in the order Starlette's ``Response`` writes them (``extra``
        after the request id)."""
        headers = [
            (b"x-model-version", self._version(answer.model_version)),
            (b"x-request-id", header_value(log_id).encode("latin-1")),
            *extra,
            (b"content-length", str(len(content)).encode()),
            content_type,
        ]
        return Reply(200, headers, content)


class ServingApp(Starlette):
    """The Starlette app with :class:`ScoringPath` in front of it for the inference routes."""

    scoring: ScoringPath | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scoring = self.scoring
        if (
            scoring is not None
            and scope["type"] == "http"
            and scope["method"] == "POST"
            and not scope.get("root_path")
        ):
            route = match(scope["path"])
            if route is not None:
                reply = await scoring.answer(
                    route, scope["headers"], lambda declared: scoring.read_asgi(receive, declared)
                )
                await send({"type": "http.response.start", "status": reply.status, "headers": reply.headers})
                await send({"type": "http.response.body", "body": reply.body})
                return
        await super().__call__(scope, receive, send)
