"""Which Python gRPC server stack answers fastest: the floor under ``mlops serve --grpc-port``.

The goal is gRPC throughput ≥ REST's, "sync or async server, a different gRPC stack, whatever
measures fastest". This measures, in one run on one machine, constant-reply servers (no model, no
checks: the cost of the stack alone) at concurrency 32 with one-row ModelInfer requests:

- ``aio-servicer``: ``grpc.aio.server`` with the generated servicer (protobuf decode + a reply built per
  call) — what ``serving/grpc_service.py`` runs on;
- ``aio-batched``: ``aio-servicer`` whose handler, like ``mlops serve``'s, awaits a future that another
  task of the event loop resolves (the batcher's hand-off, no model): what waiting on the loop costs;
- ``aio-generic``: ``grpc.aio.server`` with a generic handler, raw bytes in, one pre-encoded reply out
  (no protobuf work at all: the floor of grpc.aio itself);
- ``sync-servicer`` / ``sync-generic``: the same on the thread-pool ``grpc.server`` (8 threads);
- ``rest``: the uvicorn + Starlette constant-reply ceiling (``benchmarks/ceiling_server.py``, JSON,
  with its input checks), for reference.

Throughput, p50/p99 and server CPU µs per call (the figure that survives a loaded machine). The gRPC
load comes from ``grpc_load.py`` (Python grpc.aio clients in two processes), the REST load from wrk.

    PYTHONPATH=$PWD .venv/bin/python -m benchmarks.bench_grpc_stacks [--duration 4]   # ~1 min

Writes ``benchmarks/.out/grpc_stacks.md`` (the command and the load average before and after included).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass

import numpy as np

from benchmarks.bench_protocols import CONCURRENCY, grpc_request
from benchmarks.bench_serving import OUT, free_port, started, tree_cpu_seconds, v2_json_body
from benchmarks.grpc_load import METHOD, run_grpc_load
from benchmarks.serving_load import LoadResult, run_load

STACKS = ("aio-servicer", "aio-batched", "aio-generic", "sync-servicer", "sync-generic")
WIDTH = 20
SYNC_THREADS = 8


def _reply() -> bytes:
    from serving.proto import grpc_predict_v2_pb2 as pb

    output = pb.ModelInferResponse.InferOutputTensor(name="probability", datatype="FP32", shape=[1])
    response = pb.ModelInferResponse(model_name="bench-model", model_version="1", outputs=[output])
    response.raw_output_contents.append(np.full(1, 0.5, dtype="<f4").tobytes())
    return response.SerializeToString()


def serve(stack: str, port: int) -> None:
    """Run the constant-reply gRPC server ``stack`` on ``port`` until killed."""
    import asyncio

    import grpc

    from serving.proto import grpc_predict_v2_pb2 as pb
    from serving.proto import grpc_predict_v2_pb2_grpc as pb_grpc

    encoded = _reply()
    sync = stack.startswith("sync")
    service, method = METHOD.strip("/").split("/")

    def parsed(request: pb.ModelInferRequest, context: object) -> pb.ModelInferResponse:
        rows = request.inputs[0].shape[0]
        output = pb.ModelInferResponse.InferOutputTensor(name="probability", datatype="FP32", shape=[rows])
        response = pb.ModelInferResponse(model_name=request.model_name, model_version="1", outputs=[output])
        response.raw_output_contents.append(np.full(rows, 0.5, dtype="<f4").tobytes())
        return response

    async def parsed_async(request: pb.ModelInferRequest, context: object) -> pb.ModelInferResponse:
        return parsed(request, context)

    def raw(request: bytes, context: object) -> bytes:
        return encoded

    async def raw_async(request: bytes, context: object) -> bytes:
        return encoded

    waiting: list[asyncio.Future[None]] = []
    batch_ready = asyncio.Event()

    async def batched_async(request: pb.ModelInferRequest, context: object) -> pb.ModelInferResponse:
        future = asyncio.get_running_loop().create_future()
        waiting.append(future)
        batch_ready.set()
        await future
        return parsed(request, context)

    async def batcher() -> None:  # like serving.batching.Batcher: take what queued, resolve each
        while True:
            await batch_ready.wait()
            batch_ready.clear()
            batch = waiting[:]
            del waiting[:]
            for future in batch:
                future.set_result(None)

    if stack.endswith("generic"):
        handler = grpc.unary_unary_rpc_method_handler(raw if sync else raw_async)
    else:
        handler = grpc.unary_unary_rpc_method_handler(
            parsed if sync else batched_async if stack == "aio-batched" else parsed_async,
            request_deserializer=pb.ModelInferRequest.FromString,
            response_serializer=pb.ModelInferResponse.SerializeToString,
        )
    handlers = grpc.method_handlers_generic_handler(service, {method: handler})
    options = [("grpc.so_reuseport", 0)]
    if sync:
        server = grpc.server(futures.ThreadPoolExecutor(SYNC_THREADS), handlers=[handlers], options=options)
        server.add_insecure_port(f"127.0.0.1:{port}")
        server.start()
        print("ready", flush=True)
        server.wait_for_termination()
        return

    async def main() -> None:
        worker = asyncio.get_running_loop().create_task(batcher())
        server = grpc.aio.server(handlers=[handlers], options=options)
        server.add_insecure_port(f"127.0.0.1:{port}")
        await server.start()
        print("ready", flush=True)
        await server.wait_for_termination()
        worker.cancel()

    del pb_grpc
    asyncio.run(main())


@contextlib.contextmanager
def grpc_started(stack: str, port: int) -> Iterator[subprocess.Popen[bytes]]:
    """The constant-reply server ``stack`` in a subprocess, once its port takes calls; terminated after."""
    import grpc

    command = [sys.executable, "-m", "benchmarks.bench_grpc_stacks", "--serve", stack, "--port", str(port)]
    log_path = OUT / f"grpc-stack-{stack}.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            try:
                grpc.channel_ready_future(channel).result(timeout=60)
            except grpc.FutureTimeoutError:
                raise RuntimeError(f"{stack} not ready after 60 s; see {log_path}") from None
        yield process
    finally:
        process.terminate()
        process.wait(timeout=30)


@dataclass(frozen=True)
class Row:
    stack: str
    load: LoadResult
    server_cpu_us: float


def measure(stack: str, duration: float) -> Row:
    port = free_port()
    x = np.full((1, WIDTH), 0.5, dtype=np.float32)
    if stack == "rest":
        command = [sys.executable, "benchmarks/ceiling_server.py", "--port", str(port), "--width", str(WIDTH)]
        server = started("grpc-stack-rest", command, f"http://127.0.0.1:{port}/v2/health/ready")
    else:
        server = grpc_started(stack, port)
    with server as process:
        if stack == "rest":
            body, url = v2_json_body(x), f"http://127.0.0.1:{port}/v2/models/bench-model/infer"

            def go(seconds: float) -> LoadResult:
                return run_load(url, body, CONCURRENCY, seconds)
        else:
            request = grpc_request(x)

            def go(seconds: float) -> LoadResult:
                return run_grpc_load(f"127.0.0.1:{port}", request, CONCURRENCY, seconds)

        go(1.0)  # warm-up
        before = tree_cpu_seconds(process.pid)
        result = go(duration)
        cpu_us = 1e6 * (tree_cpu_seconds(process.pid) - before) / max(result.requests, 1)
    print(
        f"  {stack:>14}: {result.rps:8.0f} req/s  p99 {result.p99_ms:6.2f} ms  server CPU {cpu_us:6.1f} us/call"
    )
    return Row(stack, result, cpu_us)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--duration", type=float, default=4.0, help="seconds of load per stack")
    parser.add_argument("--serve", choices=STACKS, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.port)
        return 0
    OUT.mkdir(parents=True, exist_ok=True)
    started_at, load_before = time.monotonic(), os.getloadavg()
    rows = [measure(stack, args.duration) for stack in (*STACKS, "rest")]
    load_after = os.getloadavg()
    rest = rows[-1]
    lines = [
        f"`python -m benchmarks.bench_grpc_stacks {' '.join(sys.argv[1:])}`; c={CONCURRENCY}, one row, constant "
        f"reply; load average before {', '.join(f'{v:.2f}' for v in load_before)}, after "
        f"{', '.join(f'{v:.2f}' for v in load_after)}; {time.monotonic() - started_at:.0f} s",
        "",
        "| stack | req/s | vs REST | p50 / p99 ms | server CPU µs/call | errors |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row.stack} | {row.load.rps:,.0f} | {row.load.rps / rest.load.rps:.2f}× | "
            f"{row.load.p50_ms:.2f} / {row.load.p99_ms:.2f} | {row.server_cpu_us:.0f} | {row.load.errors} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    (OUT / "grpc_stacks.md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
