"""The protocol ceiling: our HTTP stack parsing the same V2 request, answering a constant, no model.

Same uvicorn settings, same Starlette routing, same body reading, JSON decoding and
V2 validation (``serving.protocol``) as the model server; only the model call,
batching, metrics and the response encoding of real predictions are missing. The
model server's throughput divided by this one's is the share of the HTTP/JSON
limit it reaches.
"""

from __future__ import annotations

import argparse

import orjson
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from serving import protocol


def create_app(name: str, width: int) -> Starlette:
    async def infer(request: Request) -> Response:
        try:
            payload = protocol.decode_json(await request.body())
            x, request_id = protocol.parse_v2_infer(payload, width)
        except protocol.ProtocolError as exc:
            return Response(
                protocol.error_body(exc.message), status_code=exc.status, media_type="application/json"
            )
        body = {
            "model_name": name,
            "model_version": "1",
            "outputs": [
                {"name": "probability", "datatype": "FP32", "shape": [len(x)], "data": [0.5] * len(x)}
            ],
        }
        return Response(orjson.dumps(body), media_type="application/json")

    async def ready(request: Request) -> Response:
        return Response(b'{"ready":true}', media_type="application/json")

    return Starlette(
        routes=[
            Route("/v2/health/ready", ready),
            Route("/v2/models/{name}/infer", infer, methods=["POST"]),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--name", default="bench-model")
    parser.add_argument("--width", type=int, default=20)
    args = parser.parse_args()
    uvicorn.run(
        create_app(args.name, args.width),
        host="127.0.0.1",
        port=args.port,
        log_level="warning",
        access_log=False,
    )


if __name__ == "__main__":
    main()
