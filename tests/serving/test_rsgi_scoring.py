"""On granian, the inference routes are answered on the RSGI protocol itself, never as ASGI messages.

Which requests take that path is pinned here on :class:`~serving.rsgi.AsgiOnRsgi` driven with stand-ins for
granian's RSGI scope and protocol objects (the attributes and calls granian's documented RSGI interface gives
an app); that the answers on a real granian server are uvicorn's, byte for byte, is
``test_granian_server.py``'s oracle test. Each answer here is also compared with the one the same request gets
through the ASGI app (``scoring = None``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from granian.rsgi import ProtocolClosed

from serving.app import create_app
from serving.fast_path import ServingApp
from serving.rsgi import AsgiOnRsgi
from tests.serving.test_fast_path import CONFIG, TOKEN
from tests.serving.test_model_router import local_model
from tests.support.serving import MODEL, DemoStore, encoded, v2_body

pytestmark = pytest.mark.slow
Adapter = tuple[AsgiOnRsgi, "Recorder", asyncio.AbstractEventLoop]
"""The adapter under test, what reached its ASGI app, and the loop it runs on."""
Answer = tuple[int, dict[str, str], bytes, list[str]]
"""Status, headers, body, and the paths that reached the ASGI app."""


class Headers:
    """granian's ``RSGIHeaders``: ``items()`` in arrival order, names lower-case."""

    def __init__(self, pairs: list[tuple[str, str]]):
        self.pairs = pairs

    def items(self) -> list[tuple[str, str]]:
        return list(self.pairs)


class Scope:
    def __init__(self, method: str, path: str, headers: list[tuple[str, str]]):
        self.proto = "http"
        self.http_version = "1.1"
        self.method = method
        self.scheme = "http"
        self.path = path
        self.query_string = ""
        self.headers = Headers(headers)
        self.server = "127.0.0.1:8080"
        self.client = "127.0.0.1:50000"


class Protocol:
    """The body as one read (``await protocol()``) or as chunks (``async for``), and the one reply."""

    def __init__(self, body: bytes, chunks: list[bytes] | None = None, gone: bool = False):
        self.body, self.chunks, self.gone = body, chunks, gone
        self.replies: list[tuple[int, list[tuple[str, str]], bytes]] = []

    async def __call__(self) -> bytes:
        if self.gone:
            raise ProtocolClosed("the client went away")
        return self.body

    def __aiter__(self) -> Iterator[bytes]:
        return self._chunks()

    async def _chunks(self) -> Any:
        for chunk in self.chunks or []:
            yield chunk
        if self.gone:
            raise ProtocolClosed("the client went away")

    async def client_disconnect(self) -> None:
        await asyncio.sleep(3600)

    def response_bytes(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        self.replies.append((status, headers, body))


class Recorder:
    """The ASGI app, recording every request that reaches it."""

    def __init__(self, app: ServingApp):
        self.app = app
        self.paths: list[str] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            self.paths.append(f"{scope['method']} {scope['path']}")
        await self.app(scope, receive, send)


@pytest.fixture(scope="module")
def adapter(store: DemoStore) -> Iterator[Adapter]:
    app = create_app(CONFIG, local_model(store.onnx_a, "1"))
    assert isinstance(app, ServingApp)
    built = AsgiOnRsgi(app)
    assert built.scoring is app.scoring
    recorder = Recorder(app)
    built.app = recorder
    loop = asyncio.new_event_loop()
    built.__rsgi_init__(loop)
    try:
        yield built, recorder, loop
    finally:
        built.__rsgi_del__(loop)
        loop.close()


def call(
    adapter: Adapter,
    method: str,
    path: str,
    protocol: Protocol,
    headers: list[tuple[str, str]],
) -> Answer:
    """The reply and the paths that reached the ASGI app."""
    built, recorder, loop = adapter
    recorder.paths.clear()
    loop.run_until_complete(built.__rsgi__(Scope(method, path, headers), protocol))
    ((status, sent, body),) = protocol.replies
    return status, dict(sent), body, list(recorder.paths)


def both_ways(
    adapter: Adapter,
    method: str,
    path: str,
    make: Any,
    headers: list[tuple[str, str]],
) -> tuple[Answer, Answer]:
    built = adapter[0]
    native = call(adapter, method, path, make(), headers)
    scoring, built.scoring = built.scoring, None
    try:
        through_asgi = call(adapter, method, path, make(), headers)
    finally:
        built.scoring = scoring
    return native, through_asgi


def auth(body: bytes | None = None) -> list[tuple[str, str]]:
    pairs = [("host", "x"), ("authorization", f"Bearer {TOKEN}"), ("x-request-id", "r-1")]
    return pairs if body is None else [*pairs, ("content-length", str(len(body)))]


@pytest.mark.parametrize(
    "path",
    [f"/v2/models/{MODEL}/infer", f"/v2/models/{MODEL}/versions/1/infer", f"/v1/models/{MODEL}:predict"],
)
def test_an_inference_route_is_answered_without_the_asgi_app(
    adapter: Adapter, store: DemoStore, path: str
) -> None:
    x = encoded(store, 2)
    body = orjson.dumps({"instances": x.tolist()} if "/v1/" in path else v2_body(x))
    native, through_asgi = both_ways(adapter, "POST", path, lambda: Protocol(body), auth(body))
    assert native[3] == [] and through_asgi[3] == [f"POST {path}"]
    assert native[0] == 200 and "content-length" not in native[1]  # granian writes it from the body
    assert native[:3] == through_asgi[:3]


@pytest.mark.parametrize(
    ("what", "make", "headers", "status"),
    [
        ("undeclared body over the limit", lambda: Protocol(b"", chunks=[b"x" * 3000] * 2), auth(), 413),
        ("declared over the limit", lambda: Protocol(b"x" * 5000), auth(b"x" * 5000), 413),
        ("client gone mid-body", lambda: Protocol(b"", chunks=[b"{"], gone=True), auth(), 499),
        ("client gone, declared body", lambda: Protocol(b"", gone=True), auth(b"{}"), 499),
        ("no token", lambda: Protocol(b"{}"), [("content-length", "2")], 401),
        ("bad json", lambda: Protocol(b"{x"), auth(b"{x"), 400),
    ],
)
def test_refusals_on_the_native_path_are_the_asgi_apps(
    adapter: Adapter,
    what: str,
    make: Any,
    headers: list[tuple[str, str]],
    status: int,
) -> None:
    native, through_asgi = both_ways(adapter, "POST", f"/v2/models/{MODEL}/infer", make, headers)
    assert native[3] == [], what
    assert native[0] == status, (what, native)
    assert native[:3] == through_asgi[:3], what


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", f"/v2/models/{MODEL}"),
        ("GET", f"/v2/models/{MODEL}/infer"),  # the wrong method: Starlette's 405
        ("POST", f"/v2/models/{MODEL}/infer/more"),
        ("GET", "/metrics"),
    ],
)
def test_every_other_request_goes_through_the_asgi_app(adapter: Adapter, method: str, path: str) -> None:
    _, _, _, reached = call(adapter, method, path, Protocol(b""), auth(b""))
    assert reached == [f"{method} {path}"]
