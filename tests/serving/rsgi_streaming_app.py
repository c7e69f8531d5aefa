"""A Starlette app on :class:`serving.rsgi.AsgiOnRsgi` for granian to import in test_granian_server.py: the paths
the model server's own routes never take (a streamed response, a body read chunk by chunk, a route that fails
before it answers)."""

from __future__ import annotations

from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, StreamingResponse
from starlette.routing import Route

from serving.rsgi import AsgiOnRsgi


async def stream(request: Request) -> StreamingResponse:
    async def parts() -> AsyncIterator[bytes]:
        for n in range(3):
            yield f"part {n};".encode()

    return StreamingResponse(parts(), media_type="text/plain", headers={"x-parts": "3"})


async def echo(request: Request) -> PlainTextResponse:
    sizes = [len(chunk) async for chunk in request.stream() if chunk]
    return PlainTextResponse(f"{sum(sizes)} bytes, {request.url.path}, {request.url.query}")


async def fail(request: Request) -> PlainTextResponse:
    raise RuntimeError("a route that fails before it answers")


def app() -> AsgiOnRsgi:
    return AsgiOnRsgi(
        Starlette(
            routes=[Route("/stream", stream), Route("/echo", echo, methods=["POST"]), Route("/fail", fail)]
        )
    )
