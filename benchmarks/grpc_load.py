"""gRPC load from separate processes: pre-serialised ModelInfer requests over one HTTP/2 channel each.

Two worker processes (like the HTTP generator) each open one channel to 127.0.0.1 and
keep ``concurrency / 2`` unary ModelInfer calls in flight for a fixed time. The request
is serialised once and sent as bytes (no per-call protobuf work in the client), so
the generator spends its CPU on gRPC itself; it still shares the machine's cores with
the server, so it measures the server lower than a native generator (ghz) would.
"""

from __future__ import annotations

import asyncio
import time

from benchmarks.serving_load import LoadResult, fan_out

METHOD = "/inference.GRPCInferenceService/ModelInfer"


def _worker(
    target: str,
    request: bytes,
    metadata: tuple[tuple[str, str], ...],
    connections: int,
    duration_s: float,
) -> tuple[list[float], int, float]:
    import grpc

    latencies: list[float] = []
    started = time.perf_counter()
    until = started + duration_s

    async def caller(call: grpc.aio.UnaryUnaryMultiCallable) -> int:
        errors = 0
        while time.perf_counter() < until:
            begun = time.perf_counter()
            try:
                await call(request, timeout=10, metadata=metadata or None)
            except grpc.aio.AioRpcError:
                errors += 1
            latencies.append(time.perf_counter() - begun)
        return errors

    async def main() -> int:
        async with grpc.aio.insecure_channel(target) as channel:
            call = channel.unary_unary(METHOD)  # bytes in, bytes out
            return sum(await asyncio.gather(*(caller(call) for _ in range(connections))))

    errors = asyncio.run(main())
    return latencies, errors, time.perf_counter() - started


def run_grpc_load(
    target: str,
    request: bytes,
    concurrency: int,
    duration_s: float,
    metadata: tuple[tuple[str, str], ...] = (),
) -> LoadResult:
    """Load ``target`` (``127.0.0.1:port``) with ``concurrency`` calls in flight for ``duration_s`` seconds;
    ``metadata`` (e.g. ``(("authorization", "Bearer <token>"),)``) goes with every call."""
    if not target.startswith("127.0.0.1:"):
        raise ValueError(f"load is only generated against 127.0.0.1, not {target}")
    return fan_out(
        _worker, (target, request, metadata), concurrency, duration_s, "python-grpc", f"call to {target}"
    )
