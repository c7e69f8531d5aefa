"""Protocol benchmark: REST JSON vs REST binary vs gRPC, 1 and 64 rows, against each transport's ceiling.

One run, concurrency 32, the same registered model: ``mlops serve`` (defaults, plus
``--grpc-port``) on each transport; the constant-reply ceiling of each transport (the
same parsing and input checks, no model; REST on uvicorn and on granian, gRPC on
grpc.aio); ``mlflow models serve`` (JSON, its only protocol) as the baseline. HTTP load
comes from wrk (Python fallback without it), gRPC load from ``grpc_load.py``; every
server is checked to answer correctly before it is loaded.

    .venv/bin/python -m benchmarks.bench_protocols [--duration 4] [--skip-mlflow]   # from the repo root

Results: markdown tables (with the command and the load average before and after) on stdout and in
``benchmarks/.out/protocols.md``, every figure in ``benchmarks/.out/protocols.json``. The last table
sets the request log at 100 % against ``--no-request-log`` (the goal: ≥ 0.8× at 64 rows of JSON);
server CPU counts the request log's writer process too. The rows table sets each server's rows/s against ONNX
Runtime's own in-process rows/s on the same model and rows, measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import httpx
import numpy as np

from benchmarks.bench_serving import (
    MODEL,
    OUT,
    free_port,
    mlflow_serve_command,
    register_model,
    rows_per_second,
    session,
    started,
    train_and_export,
    tree_cpu_seconds,
    v2_json_body,
)
from benchmarks.grpc_load import run_grpc_load
from benchmarks.serving_load import LoadResult, run_load, wrk_available

CONCURRENCY = 32
ROWS = (1, 64)
OURS = "mlops serve"
OURS_NO_LOG = "mlops serve --no-request-log"
OURS_GRANIAN = "mlops serve --http-server granian"
UVICORN = "ceiling: uvicorn + Starlette, constant reply"
GRANIAN = "ceiling: granian + Starlette, constant reply"
GRPC_CEILING = "ceiling: grpc.aio, constant reply"
MLFLOW = "mlflow models serve"


@dataclass(frozen=True)
class Point:
    server: str
    transport: str
    rows: int
    load: LoadResult
    server_cpu_us: float


def binary_body(x: np.ndarray) -> tuple[bytes, dict[str, str]]:
    raw = x.astype("<f4").tobytes()
    tensor = {"name": "features", "shape": list(x.shape), "datatype": "FP32"}
    header = json.dumps(
        {
            "inputs": [{**tensor, "parameters": {"binary_data_size": len(raw)}}],
            "outputs": [{"name": "probability", "parameters": {"binary_data": True}}],
        }
    ).encode()
    return header + raw, {"Inference-Header-Content-Length": str(len(header))}


def grpc_request(x: np.ndarray) -> bytes:
    from serving.proto import grpc_predict_v2_pb2 as pb

    request = pb.ModelInferRequest(model_name=MODEL)
    request.inputs.add(name="features", datatype="FP32", shape=list(x.shape))
    request.raw_input_contents.append(x.astype("<f4").tobytes())
    return request.SerializeToString()


def answer(transport: str, url: str, grpc_target: str, x: np.ndarray) -> np.ndarray:
    """One request on ``transport``; the probabilities it returns."""
    if transport == "grpc":
        import grpc

        from serving.proto import grpc_predict_v2_pb2 as pb

        with grpc.insecure_channel(grpc_target) as channel:
            raw = channel.unary_unary("/inference.GRPCInferenceService/ModelInfer")(
                grpc_request(x), timeout=10
            )
        return np.frombuffer(pb.ModelInferResponse.FromString(raw).raw_output_contents[0], dtype="<f4")
    if transport == "rest-binary":
        body, headers = binary_body(x)
        response = httpx.post(url, content=body, headers=headers, timeout=10)
        response.raise_for_status()
        cut = int(response.headers["inference-header-content-length"])
        return np.frombuffer(response.content[cut:], dtype="<f4")
    if transport == "mlflow-json":
        response = httpx.post(url, json={"inputs": x.tolist()}, timeout=10)
        response.raise_for_status()
        return np.ravel(response.json()["predictions"]["probability"]).astype(np.float32)
    response = httpx.post(url, content=v2_json_body(x), timeout=10)
    response.raise_for_status()
    return np.asarray(response.json()["outputs"][0]["data"], dtype=np.float32)


def load(transport: str, url: str, grpc_target: str, x: np.ndarray, duration: float) -> LoadResult:
    if transport == "grpc":
        return run_grpc_load(grpc_target, grpc_request(x), CONCURRENCY, duration)
    if transport == "rest-binary":
        body, headers = binary_body(x)
        return run_load(url, body, CONCURRENCY, duration, headers)
    if transport == "mlflow-json":
        return run_load(url, json.dumps({"inputs": x.tolist()}).encode(), CONCURRENCY, duration)
    return run_load(url, v2_json_body(x), CONCURRENCY, duration)


def measure_server(
    label: str,
    command: list[str],
    ready_path: str,
    infer_path: str,
    transports: tuple[str, ...],
    x: np.ndarray,
    expected: Callable[[np.ndarray], np.ndarray] | None,
    args: argparse.Namespace,
    env: dict[str, str] | None = None,
) -> list[Point]:
    port, grpc_port = free_port(), free_port()
    command = [part.replace("{port}", str(port)).replace("{grpc_port}", str(grpc_port)) for part in command]
    base, target = f"http://127.0.0.1:{port}", f"127.0.0.1:{grpc_port}"
    points = []
    print(f"{label} on :{port} (gRPC :{grpc_port})")
    with started(label, command, base + ready_path, env) as process:
        for transport in transports:
            for rows in ROWS:
                sample = np.ascontiguousarray(x[:rows])
                got = answer(transport, base + infer_path, target, sample)
                if expected is not None:
                    np.testing.assert_allclose(got, expected(sample), rtol=1e-5, atol=1e-6)
                load(transport, base + infer_path, target, sample, 1.0)  # warm-up
                cpu_before = tree_cpu_seconds(process.pid)
                result = load(transport, base + infer_path, target, sample, args.duration)
                cpu_us = 1e6 * (tree_cpu_seconds(process.pid) - cpu_before) / max(result.requests, 1)
                points.append(Point(label, transport, rows, result, cpu_us))
                print(
                    f"    {transport:>12} {rows:>2} rows: {result.rps:8.0f} req/s  p99 {result.p99_ms:6.2f} ms  "
                    f"server CPU {cpu_us:6.1f} us/req  errors {result.errors}"
                )
    return points


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--duration", type=float, default=4.0, help="seconds of load per point")
    parser.add_argument("--skip-mlflow", action="store_true")
    parser.add_argument(
        "--only-ours", action="store_true", help="measure mlops serve only (no ceilings, no mlflow)"
    )
    parser.add_argument(
        "--ours-flag",
        action="append",
        default=[],
        help="extra mlops serve flag, e.g. --ours-flag=--no-request-log",
    )
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    print(f"HTTP load: {'wrk' if wrk_available() else 'python fallback'}; gRPC load: python (grpc.aio)")
    started_at, load_before = time.monotonic(), os.getloadavg()
    workspace_root = OUT / "protocols-workspace"
    if workspace_root.exists():
        import shutil

        shutil.rmtree(workspace_root)
    fp32_path = train_and_export(OUT / "protocols-model", (128, 64), steps=60)
    tracking_uri = register_model(workspace_root, fp32_path)

    from mlops.data.sample_data import SampleDataConfig, generate
    from mlops.model.onnx_model import OnnxScorer

    scorer = OnnxScorer.load(fp32_path)
    frame = generate(SampleDataConfig(rows=64, seed=5, missing_rate=0.0))
    x = scorer.spec.encode(frame)
    python = sys.executable
    ours = [
        python, "-m", "cli.commands.serve", "--workspace", str(workspace_root), "--model-name", MODEL,
        "--port", "{port}", "--grpc-port", "{grpc_port}", *args.ours_flag,
    ]  # fmt: skip
    ceiling = [python, "benchmarks/ceiling_server.py", "--port", "{port}", "--onnx", str(fp32_path)]
    ready, v2 = "/v2/health/ready", f"/v2/models/{MODEL}/infer"
    points = measure_server(
        OURS, ours, ready, v2, ("rest-json", "rest-binary", "grpc"), x, scorer.predict_encoded, args
    )
    points += measure_server(
        OURS_NO_LOG, [*ours, "--no-request-log"], ready, v2, ("rest-json", "rest-binary", "grpc"), x,
        scorer.predict_encoded, args,
    )  # fmt: skip
    points += measure_server(
        OURS_GRANIAN, [*ours, "--http-server", "granian"], ready, v2, ("rest-json", "rest-binary"), x,
        scorer.predict_encoded, args,
    )  # fmt: skip
    in_process = session(fp32_path)
    ort_rows = {rows: rows_per_second(in_process, np.ascontiguousarray(x[:rows]), 2.0) for rows in ROWS}
    print("ONNX Runtime in process, rows/s: " + ", ".join(f"{r} rows {v:,.0f}" for r, v in ort_rows.items()))
    if args.only_ours:
        return report(points, ort_rows, args, started_at, load_before)
    points += measure_server(
        UVICORN,
        [*ceiling, "--grpc-port", "{grpc_port}"],
        ready,
        v2,
        ("rest-json", "rest-binary"),
        x,
        None,
        args,
    )
    points += measure_server(
        GRPC_CEILING, [*ceiling, "--grpc-port", "{grpc_port}"], ready, v2, ("grpc",), x, None, args
    )
    points += measure_server(
        GRANIAN, [*ceiling, "--server", "granian"], ready, v2, ("rest-json", "rest-binary"), x, None, args
    )
    if not args.skip_mlflow:
        command, env = mlflow_serve_command(python, tracking_uri)
        points += measure_server(
            MLFLOW, command, "/ping", "/invocations", ("mlflow-json",), x, scorer.predict_encoded, args, env
        )
    return report(points, ort_rows, args, started_at, load_before)


def report(
    points: list[Point],
    ort_rows: dict[int, float],
    args: argparse.Namespace,
    started_at: float,
    load_before: tuple[float, ...],
) -> int:
    """Print the tables and write them, with the command and the load average, to ``.out/protocols.md``."""
    load_after = os.getloadavg()
    text = (
        f"`{' '.join(['python -m benchmarks.bench_protocols', *sys.argv[1:]])}`; load average (1, 5, 15 min) "
        f"before {', '.join(f'{v:.2f}' for v in load_before)}, after {', '.join(f'{v:.2f}' for v in load_after)}; "
        f"{time.monotonic() - started_at:.0f} s\n\n"
        + summarise(points)
        + against_onnx_runtime(points, ort_rows)
    )
    print(text)
    (OUT / "protocols.md").write_text(text)
    (OUT / "protocols.json").write_text(
        json.dumps(
            {
                "points": [{**asdict(p), "load": asdict(p.load)} for p in points],
                "onnx_runtime_rows_s": ort_rows,
                "seconds": time.monotonic() - started_at,
                "load_before": load_before,
                "load_after": load_after,
            },
            indent=2,
        )
    )
    return 0


def summarise(points: list[Point]) -> str:
    by = {(p.server, p.transport, p.rows): p for p in points}
    lines = [
        "| server | transport | rows | req/s | rows/s | p50 / p99 ms | server CPU µs/req | errors |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for p in points:
        lines.append(
            f"| {p.server} | {p.transport} | {p.rows} | {p.load.rps:,.0f} | {p.load.rps * p.rows:,.0f} | "
            f"{p.load.p50_ms:.2f} / {p.load.p99_ms:.2f} | {p.server_cpu_us:.0f} | {p.load.errors} |"
        )
    lines += [
        "",
        "| mlops serve, c=32 | vs its transport's ceiling | vs fastest ceiling | vs mlflow models serve |",
    ]
    lines.append("|---|---|---|---|")
    ceilings = {"rest-json": (UVICORN, GRANIAN), "rest-binary": (UVICORN, GRANIAN), "grpc": (GRPC_CEILING,)}
    for transport, servers in ceilings.items():
        for rows in ROWS:
            ours = by.get((OURS, transport, rows))
            if ours is None:
                continue
            own = by.get((servers[0], transport, rows))
            fastest = max(
                (
                    by[(s, t, rows)]
                    for s in (UVICORN, GRANIAN, GRPC_CEILING)
                    for t in ceilings
                    if (s, t, rows) in by
                ),
                key=lambda p: p.load.rps,
                default=None,  # --only-ours: no ceiling measured
            )
            mlflow = by.get((MLFLOW, "mlflow-json", rows))
            cells = [
                f"{ours.load.rps / own.load.rps:.2f}×" if own else "-",
                f"{ours.load.rps / fastest.load.rps:.2f}× ({fastest.server.split(':')[1].split(',')[0].strip()} "
                f"{fastest.transport})"
                if fastest
                else "-",
                f"{ours.load.rps / mlflow.load.rps:.1f}×" if mlflow else "-",
            ]
            lines.append(f"| {transport}, {rows} row(s) | " + " | ".join(cells) + " |")
    lines += [
        "",
        "| request log at 100 % vs off (same transport, rows) | req/s ratio | server CPU µs/req on / off |",
    ]
    lines.append("|---|---|---|")
    for transport in ("rest-json", "rest-binary", "grpc"):
        for rows in ROWS:
            on, off = by.get((OURS, transport, rows)), by.get((OURS_NO_LOG, transport, rows))
            if on is None or off is None:
                continue
            lines.append(
                f"| {transport}, {rows} row(s) | {on.load.rps / off.load.rps:.2f}× | "
                f"{on.server_cpu_us:.0f} / {off.server_cpu_us:.0f} |"
            )
    return "\n".join(lines) + "\n"


def against_onnx_runtime(points: list[Point], ort_rows: dict[int, float]) -> str:
    """Each server's rows/s at c = 32 against ONNX Runtime's in-process rows/s on the same rows."""
    lines = [
        "",
        "| server, transport, rows | rows/s | ONNX Runtime in process, rows/s | ratio |",
        "|---|---|---|---|",
    ]
    for p in points:
        if p.transport == "mlflow-json" or p.server == OURS_NO_LOG:
            continue
        reference = ort_rows[p.rows]
        rows_s = p.load.rps * p.rows
        lines.append(
            f"| {p.server}, {p.transport}, {p.rows} | {rows_s:,.0f} | {reference:,.0f} | {rows_s / reference:.2f}× |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
