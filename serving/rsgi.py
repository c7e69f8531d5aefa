"""The server's ASGI app on granian's RSGI interface: HTTP is parsed and written in Rust, the app runs unchanged.

On uvicorn the event loop's thread parses every request and writes every response in Python
(httptools' callbacks, the response cycle's ``send``): measured under load, that was the largest
share of the server's Python time after the scoring itself. granian does that work in its Rust
runtime and hands the app a request as one RSGI call. :class:`AsgiOnRsgi` presents that call to
the same ASGI app (:class:`~serving.fast_path.ServingApp`: the inference routes in front of
Starlette), so every route, check, status, header and body is the app's own, on either server.

What the adapter maps, and where RSGI differs from what uvicorn hands an ASGI app:

- the scope: RSGI's path is already percent-decoded, as ASGI's ``path``; ``raw_path`` is that path
  encoded again (the app reads ``path`` only). Headers arrive as text, in order, repeated ones
  included; granian drops a header whose value is not valid UTF-8 before the app sees it.
- the body: one read of the whole body when the request declares its length (the app refuses an
  oversized declared length before it reads: :func:`serving.http.read_body`), else chunk by chunk,
  so a chunked body over the limit is refused while it arrives, as on uvicorn. A client that goes
  away mid-body is ASGI's ``http.disconnect`` (the app counts it as closed by the client, 499), and
  an answer to nobody is dropped.
- the response: one ``response_bytes`` when the app sends its body in one message (every route of
  this app does), else a stream. granian writes ``content-length`` itself from the body, so the app's
  own is left out rather than sent twice.
- the inference routes: answered without ASGI at all. A ``POST`` whose path is an inference route
  goes to the app's :class:`~serving.fast_path.ScoringPath` directly: its headers as they came, its
  body read from the protocol object (the same 413 limits, a client gone mid-body is 499), the reply
  written with one ``response_bytes``. Every other request takes the mapping above.
- the lifespan: started in ``__rsgi_init__`` before the worker accepts, stopped in ``__rsgi_del__``
  after it stops accepting (SIGINT/SIGTERM), through the ASGI lifespan messages, so the batchers,
  the request-log writer, the reload watcher and gRPC start and stop as on uvicorn.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

from granian.rsgi import ProtocolClosed
from starlette.requests import ClientDisconnect

from serving.errors import PayloadTooLarge
from serving.fast_path import match, refuse_oversized

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message

    from serving.fast_path import Reply, Route, ScoringPath

ASGI_VERSION = {"version": "3.0", "spec_version": "2.3"}
_CONTENT_LENGTH = "content-length"
_INTERNAL_ERROR = (500, [("content-type", "text/plain; charset=utf-8")], b"Internal Server Error")
"""What uvicorn answers when the app fails before answering."""


class LifespanFailed(RuntimeError):
    """The app refused to start (``lifespan.startup.failed``); the message is the app's."""


class _Exchange:
    """One request's ``receive`` and ``send`` on an RSGI protocol object."""

    __slots__ = ("_chunks", "_headers", "_protocol", "_read", "_status", "_stream", "sent")

    def __init__(self, protocol: Any, declared: bool):
        self._protocol = protocol
        self._read = False
        self._chunks: Any = None if declared else protocol.__aiter__()
        self._status = 200
        self._headers: list[tuple[str, str]] = []
        self._stream: Any = None
        self.sent = False

    async def receive(self) -> Message:
        try:
            if self._chunks is not None:
                try:
                    chunk = await self._chunks.__anext__()
                except StopAsyncIteration:
                    self._chunks = None
                    self._read = True
                    return {"type": "http.request", "body": b"", "more_body": False}
                return {"type": "http.request", "body": chunk, "more_body": True}
            if not self._read:
                self._read = True
                return {"type": "http.request", "body": await self._protocol(), "more_body": False}
            await self._protocol.client_disconnect()
        except ProtocolClosed:  # the client went away before its body arrived: ASGI's disconnect
            self._chunks = None
            self._read = True
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            self._status = message["status"]
            self._headers = [
                (key.decode("latin-1"), value.decode("latin-1"))
                for key, value in message.get("headers", ())
                if key.lower() != b"content-length"
            ]
            return
        if kind != "http.response.body":
            return
        body = message.get("body", b"")
        more = message.get("more_body", False)
        try:
            await self._write(body, more)
        except ProtocolClosed:  # nobody to answer: the client has gone (uvicorn drops the send too)
            self.sent = True

    async def _write(self, body: bytes, more: bool) -> None:
        if self._stream is None and not more:
            self._protocol.response_bytes(self._status, self._headers, body)
            self.sent = True
            return
        if self._stream is None:
            self._stream = self._protocol.response_stream(self._status, self._headers)
            self.sent = True
        if body:
            await self._stream.send_bytes(body)


async def read_rsgi(protocol: Any, declared: bytes | None, limit: int) -> bytes:
    """The request's body from granian's protocol object, with :func:`~serving.http.read_body`'s limits:
    a declared length is read in one call, an undeclared one chunk by chunk and refused once over."""
    refuse_oversized(declared, limit)
    try:
        if declared is not None:
            return bytes(await protocol())
        chunks: list[bytes] = []
        size = 0
        async for chunk in protocol:
            size += len(chunk)
            if size > limit:
                raise PayloadTooLarge(f"request body exceeds the limit of {limit} bytes")
            chunks.append(chunk)
        return b"".join(chunks)
    except ProtocolClosed:  # the client went away before its body arrived
        raise ClientDisconnect() from None


def write_rsgi(protocol: Any, reply: Reply) -> None:
    """``reply`` in one ``response_bytes``; granian writes ``content-length`` itself from the body."""
    headers = [
        (key.decode("latin-1"), value.decode("latin-1"))
        for key, value in reply.headers
        if key != b"content-length"
    ]
    with contextlib.suppress(ProtocolClosed):  # nobody to answer: the client has gone
        protocol.response_bytes(reply.status, headers, reply.body)


class AsgiOnRsgi:
    """An ASGI app served through granian's RSGI interface (HTTP only; the app serves no WebSocket).

    ``app.scoring`` (:class:`~serving.fast_path.ServingApp`'s scoring path), when the app has one,
    answers the inference routes on the RSGI protocol directly; None sends them through the app too.
    """

    def __init__(self, app: ASGIApp):
        self.app = app
        self.scoring: ScoringPath | None = getattr(app, "scoring", None)
        self._state: dict[str, Any] = {}
        self._lifespan: asyncio.Task[None] | None = None
        self._inbox: asyncio.Queue[Message] | None = None
        self._outbox: asyncio.Queue[Message] | None = None

    async def __rsgi__(self, scope: Any, protocol: Any) -> None:
        if scope.proto != "http":
            protocol.close(403)
            return
        pairs = scope.headers.items()
        headers = [(key.encode("latin-1"), value.encode("latin-1")) for key, value in pairs]
        if self.scoring is not None and scope.method == "POST":
            route = match(scope.path)
            if route is not None:
                await self._score(self.scoring, route, headers, protocol)
                return
        declared = any(key == _CONTENT_LENGTH for key, _ in pairs)
        host, _, port = scope.server.rpartition(":")
        client_host, _, client_port = scope.client.rpartition(":")
        path = scope.path
        asgi_scope = {
            "type": "http",
            "asgi": ASGI_VERSION,
            "http_version": scope.http_version,
            "method": scope.method,
            "scheme": scope.scheme,
            "path": path,
            "raw_path": path.encode(),
            "query_string": scope.query_string.encode("latin-1"),
            "root_path": "",
            "headers": headers,
            "server": (host.strip("[]"), int(port or 0)),
            "client": (client_host.strip("[]"), int(client_port or 0)),
            "state": self._state.copy(),
        }
        exchange = _Exchange(protocol, declared)
        try:
            await self.app(asgi_scope, exchange.receive, exchange.send)
        finally:
            if not exchange.sent:  # the app failed before answering: what uvicorn answers then
                with contextlib.suppress(ProtocolClosed):
                    protocol.response_bytes(*_INTERNAL_ERROR)

    @staticmethod
    async def _score(
        scoring: ScoringPath, route: Route, headers: list[tuple[bytes, bytes]], protocol: Any
    ) -> None:
        """An inference request answered by the scoring path on the protocol object itself."""
        limit = scoring.limit
        try:
            reply = await scoring.answer(
                route, headers, lambda declared: read_rsgi(protocol, declared, limit)
            )
        except BaseException:
            with contextlib.suppress(ProtocolClosed):
                protocol.response_bytes(*_INTERNAL_ERROR)
            raise
        write_rsgi(protocol, reply)

    def __rsgi_init__(self, loop: asyncio.AbstractEventLoop) -> None:
        loop.run_until_complete(self.startup())

    def __rsgi_del__(self, loop: asyncio.AbstractEventLoop) -> None:
        loop.run_until_complete(self.shutdown())

    async def startup(self) -> None:
        """Run the app's lifespan until it has started; :class:`LifespanFailed` when it refuses."""
        self._inbox, self._outbox = asyncio.Queue(), asyncio.Queue()
        scope = {"type": "lifespan", "asgi": ASGI_VERSION, "state": self._state}
        self._lifespan = asyncio.ensure_future(self.app(scope, self._inbox.get, self._outbox.put))
        await self._inbox.put({"type": "lifespan.startup"})
        answer = await self._answer()
        if answer["type"] != "lifespan.startup.complete":
            raise LifespanFailed(answer.get("message", "") or "the app's lifespan startup failed")

    async def shutdown(self) -> None:
        """Stop the app's lifespan (in-flight work drained by the app's own shutdown)."""
        if self._lifespan is None or self._inbox is None:
            return
        await self._inbox.put({"type": "lifespan.shutdown"})
        answer = await self._answer()
        await self._lifespan
        self._lifespan = None
        if answer["type"] != "lifespan.shutdown.complete":
            raise LifespanFailed(answer.get("message", "") or "the app's lifespan shutdown failed")

    async def _answer(self) -> Message:
        """The app's next lifespan message, or the exception that ended its lifespan."""
        assert self._outbox is not None and self._lifespan is not None
        getter = asyncio.ensure_future(self._outbox.get())
        done, _ = await asyncio.wait({getter, self._lifespan}, return_when=asyncio.FIRST_COMPLETED)
        if getter in done:
            return getter.result()
        getter.cancel()
        self._lifespan.result()  # raises what ended it
        raise LifespanFailed("the app's lifespan ended without answering")
