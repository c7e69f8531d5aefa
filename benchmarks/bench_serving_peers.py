"""Serving peers side by side: `mlops serve` against MLServer, KServe, BentoML, mlflow and the ceilings.

One run, one machine, one server process (or one worker) per peer, the same ONNX model:

- ``mlops serve`` with its defaults (strict V2 input checks, batching, Prometheus metrics,
  request log at 100 %) plus a bearer token, so auth is on too; the same with
  ``--no-request-log`` (REST JSON only: the 64-row log on/off goal); and the same on granian
  (``--http-server granian``, REST);
- MLServer 1.7 with a custom runtime (``peers/mlserver_onnx_runtime.py``), inference in the
  server process (``parallel_workers: 0``);
- KServe 0.21's Python ``ModelServer`` (``kserve_server.py``), REST and gRPC;
- BentoML (``peers/bentoml_onnx_service.py``), one worker;
- ``mlflow models serve`` of the registered model (its pyfunc ONNX flavor), as in ``bench_serving.py``;
- the constant-reply ceilings of ``ceiling_server.py``: uvicorn + Starlette (with grpc.aio in
  the same process), granian + Starlette, and granian's RSGI interface with no framework (the
  fastest server here that parses the JSON body, REST JSON only).

Every peer scores with ONNX Runtime 1.31.1, one intra-op thread. Each peer runs from its own
virtual environment (``bash benchmarks/peers/setup_venvs.sh`` builds them once per machine);
a peer whose venv is missing is reported as skipped. Before a peer is timed, the same 64
rows are scored by it on each of its transports and compared with ONNX Runtime in-process
(tolerance 1e-5); a peer that answers differently is reported as failed and not timed.

Every peer × transport (REST JSON, REST binary tensors, gRPC where the peer has them) × rows
{1, 64} × concurrency {1, 8, 32, 128}: req/s, rows/s, p50/p99 ms, server CPU µs per request
(the peer's process tree, from /proc), errors. HTTP load comes from wrk (Python fallback
without it), gRPC load from ``grpc_load.py``.

    .venv/bin/python -m benchmarks.bench_serving_peers [--duration 3] [--only ours,mlserver] [--rows 1]
        [--concurrency 1 32] [--transports rest-json grpc]          # from the repo root

Writes ``benchmarks/.out/serving_peers.md`` (the command, load average before/after, the
table, features and processes per peer, the goals at c = 32, single row, each
"met"/"NOT met" with its figures), ``serving_peers.json`` and ``serving_peers.png`` (req/s
against concurrency per peer, single row). The total run time is estimated and printed
before the first server starts; the default run takes about 13 minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shlex
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from benchmarks.bench_serving import (
    MODEL,
    OUT,
    REPO,
    free_port,
    mlflow_serve_command,
    register_model,
    serve_command,
    started,
    train_and_export,
    tree_cpu_seconds,
    v2_json_body,
)
from benchmarks.grpc_load import run_grpc_load
from benchmarks.serving_load import LoadResult, run_load, wrk_available

CACHE = Path(os.environ.get("MLOPS_BENCH_CACHE", Path.home() / ".cache/mlops-bench"))
PEERS_DIR = REPO / "benchmarks" / "peers"
ROWS = (1, 64)
CONCURRENCY = (1, 8, 32, 128)
TOLERANCE = 1e-5
GOAL_CONCURRENCY = 32
# The goals at c = 32, single row, for `mlops serve` with its defaults and a bearer token.
GOAL_VS_PYTHON_PEER = 5.0
GOAL_VS_CEILING = 0.6  # of the fastest constant-reply ceiling (the raw RSGI one, where it runs)
GOAL_P99_OVER_P50 = 2.0
GOAL_GRPC_VS_CEILING = 0.85  # of the grpc.aio constant-reply ceiling
GOAL_CPU_VS_CEILING = 1.6  # server CPU per request, against the fastest ceiling's
GOAL_LOG_ON_OFF = 0.8
# Seconds a point costs beyond its --duration (wrk or worker start, /proc walk), a peer's
# start-up and check, and one warm-up per (transport, rows): what the estimate adds.
POINT_OVERHEAD_S = 1.0
PEER_STARTUP_S = 20.0
WARMUP_S = 1.0
TRANSPORTS = ("rest-json", "rest-binary", "grpc")
GRPC_METHOD = "/inference.GRPCInferenceService/ModelInfer"


@dataclass(frozen=True)
class Peer:
    """One server to measure: how it starts ("{port}", "{grpc_port}", "{metrics_port}" filled in) and speaks."""

    key: str
    label: str
    processes: str
    features: str
    transports: tuple[str, ...]
    command: list[str]
    ready_path: str
    infer_path: str
    kind: str  # "ours", "python-peer", "mlflow" or "ceiling": what the goals compare
    dialect: str = "v2"  # request/response shape on rest-json: "v2", "mlflow" or "bentoml"
    headers: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] | None = None
    checked: bool = True  # ceilings answer a constant: nothing to compare
    binary_request_parameters: bool = False  # ask for binary outputs with the request-level parameter


@dataclass(frozen=True)
class Point:
    peer: str
    transport: str
    rows: int
    load: LoadResult
    server_cpu_us: float


# --- requests and answers per transport ----------------------------------------------------------------


def v2_binary_body(x: np.ndarray, request_parameters: bool) -> tuple[bytes, dict[str, str]]:
    """A V2 binary-tensor request asking for a binary output (per output, or request-wide for KServe)."""
    raw = x.astype("<f4").tobytes()
    header: dict[str, Any] = {
        "inputs": [
            {
                "name": "features",
                "shape": list(x.shape),
                "datatype": "FP32",
                "parameters": {"binary_data_size": len(raw)},
            }
        ],
        "outputs": [{"name": "probability", "parameters": {"binary_data": True}}],
    }
    if request_parameters:
        header["parameters"] = {"binary_data_output": True}
    encoded = json.dumps(header).encode()
    # Not application/json: KServe's FastAPI would parse the whole body as JSON and answer 400.
    return encoded + raw, {
        "Content-Type": "application/octet-stream",
        "Inference-Header-Content-Length": str(len(encoded)),
    }


def grpc_request(x: np.ndarray) -> bytes:
    from serving.proto import grpc_predict_v2_pb2 as pb

    request = pb.ModelInferRequest(model_name=MODEL)
    request.inputs.add(name="features", datatype="FP32", shape=list(x.shape))
    request.raw_input_contents.append(x.astype("<f4").tobytes())
    return request.SerializeToString()


def decode_v2_http(response: httpx.Response) -> np.ndarray:
    """Probabilities from a V2 REST answer, binary (Inference-Header-Content-Length) or JSON."""
    cut = response.headers.get("inference-header-content-length")
    if cut is not None:
        header = json.loads(response.content[: int(cut)])
        if "binary_data_size" in (header["outputs"][0].get("parameters") or {}):
            return np.frombuffer(response.content[int(cut) :], dtype="<f4")
        return np.asarray(header["outputs"][0]["data"], dtype=np.float32)
    return np.asarray(response.json()["outputs"][0]["data"], dtype=np.float32)


def decode_grpc(raw: bytes) -> np.ndarray:
    """Probabilities from a ModelInferResponse: raw output contents, else typed FP32 contents."""
    from serving.proto import grpc_predict_v2_pb2 as pb

    answer = pb.ModelInferResponse.FromString(raw)
    if answer.raw_output_contents:
        return np.frombuffer(answer.raw_output_contents[0], dtype="<f4")
    return np.asarray(answer.outputs[0].contents.fp32_contents, dtype=np.float32)


def http_request(peer: Peer, transport: str, x: np.ndarray) -> tuple[bytes, dict[str, str]]:
    """Body and headers of one request of ``x`` to ``peer`` on an HTTP transport."""
    if transport == "rest-binary":
        body, headers = v2_binary_body(x, peer.binary_request_parameters)
        return body, {**peer.headers, **headers}
    if peer.dialect == "mlflow":
        return json.dumps({"inputs": x.tolist()}).encode(), dict(peer.headers)
    if peer.dialect == "bentoml":
        return json.dumps({"features": x.tolist()}).encode(), dict(peer.headers)
    return v2_json_body(x), dict(peer.headers)


def decode_http(peer: Peer, response: httpx.Response) -> np.ndarray:
    if peer.dialect == "mlflow":
        # The pyfunc ONNX flavor answers {"predictions": {"probability": [...]}} for a named output.
        return np.ravel(response.json()["predictions"]["probability"]).astype(np.float32)
    if peer.dialect == "bentoml":
        return np.ravel(response.json()).astype(np.float32)
    return decode_v2_http(response)


def grpc_metadata(peer: Peer) -> tuple[tuple[str, str], ...]:
    token = peer.headers.get("Authorization")
    return (("authorization", token),) if token else ()


def answer(peer: Peer, transport: str, base: str, grpc_target: str, x: np.ndarray) -> np.ndarray:
    """One request on ``transport``; the probabilities it returns (raises on a non-2xx answer)."""
    if transport == "grpc":
        import grpc

        with grpc.insecure_channel(grpc_target) as channel:
            raw = channel.unary_unary(GRPC_METHOD)(grpc_request(x), timeout=10, metadata=grpc_metadata(peer))
        return decode_grpc(raw)
    body, headers = http_request(peer, transport, x)
    response = httpx.post(
        base + peer.infer_path,
        content=body,
        headers={"Content-Type": "application/json", **headers},
        timeout=10,
    )
    if response.status_code != 200:
        raise RuntimeError(f"HTTP {response.status_code}: {response.text[:300]}")
    return decode_http(peer, response)


def load(
    peer: Peer, transport: str, base: str, grpc_target: str, x: np.ndarray, concurrency: int, duration: float
) -> LoadResult:
    if transport == "grpc":
        return run_grpc_load(grpc_target, grpc_request(x), concurrency, duration, grpc_metadata(peer))
    body, headers = http_request(peer, transport, x)
    return run_load(base + peer.infer_path, body, concurrency, duration, headers)


# --- the peers --------------------------------------------------------------------------------------------


def venv_python(peer: str) -> Path:
    return CACHE / f"{peer}-venv" / "bin" / "python"


def mlserver_folder(onnx_path: Path, directory: Path) -> Path:
    """MLServer's settings.json (ports from the environment) and the model's model-settings.json."""
    model_dir = directory / MODEL
    model_dir.mkdir(parents=True, exist_ok=True)
    (directory / "settings.json").write_text(json.dumps({"parallel_workers": 0, "host": "127.0.0.1"}))
    (model_dir / "model-settings.json").write_text(
        json.dumps(
            {
                "name": MODEL,
                "implementation": "mlserver_onnx_runtime.OnnxRuntimeModel",
                "parameters": {"uri": str(onnx_path)},
            }
        )
    )
    return directory


def build_peers(onnx_path: Path, workspace_root: Path, tracking_uri: str, token: str) -> list[Peer]:
    python = sys.executable
    v2 = f"/v2/models/{MODEL}/infer"
    ours = [*serve_command(workspace_root, MODEL), "--port", "{port}", "--auth-token", token]
    auth = {"Authorization": f"Bearer {token}"}
    ours_features = (
        "auth (bearer token) on, Prometheus metrics on, request log 100 % on, strict V2 input checks, "
        "dynamic batching (defaults)"
    )
    peers = [
        Peer(
            "ours", "mlops serve (defaults + auth)", "1 (uvicorn, gRPC in the same process)", ours_features,
            TRANSPORTS, [*ours, "--grpc-port", "{grpc_port}"], "/v2/health/ready", v2, "ours", headers=auth,
        ),
        Peer(
            "ours-no-log", "mlops serve --no-request-log", "1 (uvicorn)",
            ours_features.replace("request log 100 % on", "request log OFF"), ("rest-json",),
            [*ours, "--no-request-log"], "/v2/health/ready", v2, "ours-no-log", headers=auth,
        ),
        Peer(
            "ours-granian", "mlops serve --http-server granian (defaults + auth)",
            "1 granian worker (+ its parent process)", ours_features, ("rest-json", "rest-binary"),
            [*ours, "--http-server", "granian"], "/v2/health/ready", v2, "ours-granian", headers=auth,
        ),
    ]  # fmt: skip
    mlserver_env = {
        **os.environ,
        "PYTHONPATH": str(PEERS_DIR),
        "MLSERVER_HTTP_PORT": "{port}",
        "MLSERVER_GRPC_PORT": "{grpc_port}",
        "MLSERVER_METRICS_PORT": "{metrics_port}",
    }
    folder = mlserver_folder(onnx_path, OUT / "peers-mlserver")
    mlserver_bin = venv_python("mlserver").with_name("mlserver")
    peers.append(
        Peer(
            "mlserver", "MLServer 1.7.1 (custom ONNX runtime)", "1 (parallel_workers 0: inference in the server)",
            "auth none (MLServer has none), Prometheus metrics on (default), access log on (default), "
            "V2 input parsing by its pydantic types; REST binary tensors: not supported by MLServer",
            ("rest-json", "grpc"), [str(mlserver_bin), "start", str(folder)],
            f"/v2/models/{MODEL}/ready", v2, "python-peer", env=mlserver_env,
        )
    )  # fmt: skip
    kserve = [
        str(venv_python("kserve")), "benchmarks/kserve_server.py", "--model_path", str(onnx_path),
        "--model_name", MODEL, "--http_port", "{port}", "--grpc_port", "{grpc_port}",
        "--enable_grpc", "true", "--enable_latency_logging", "false",
    ]  # fmt: skip
    peers.append(
        Peer(
            "kserve", "KServe 0.21 ModelServer", "1 (uvicorn, 1 worker; gRPC in the same process)",
            "auth none (KServe has none), Prometheus metrics on (default), access and latency logs OFF "
            "(as in bench_serving.py), V2 input parsing by its pydantic types",
            ("rest-json", "rest-binary", "grpc"), kserve, "/v2/health/ready", v2, "python-peer",
            binary_request_parameters=True,
        )
    )  # fmt: skip
    bentoml_bin = venv_python("bentoml").with_name("bentoml")
    peers.append(
        Peer(
            "bentoml", "BentoML 1.4.40 (@bentoml.service)", "1 worker (+ its supervisor process)",
            "auth none, Prometheus metrics on (default), access log on (default), input checked by its "
            "pydantic model of the API signature",
            ("rest-json",),
            [str(bentoml_bin), "serve", "bentoml_onnx_service:OnnxService", "--working-dir", str(PEERS_DIR),
             "--host", "127.0.0.1", "--port", "{port}"],
            "/readyz", "/predict", "python-peer", dialect="bentoml",
            env={**os.environ, "MLOPS_BENCH_ONNX": str(onnx_path), "BENTOML_HOME": str(OUT / "bentoml-home")},
        )
    )  # fmt: skip
    mlflow_command, mlflow_env = mlflow_serve_command(python, tracking_uri)
    peers.append(
        Peer(
            "mlflow", "mlflow models serve", "1 (uvicorn, 1 worker)",
            "auth none, no metrics endpoint, access log on (default), input checked against the model "
            "signature", ("rest-json",), mlflow_command, "/ping", "/invocations", "mlflow",
            dialect="mlflow", env=mlflow_env,
        )
    )  # fmt: skip
    ceiling = [python, "benchmarks/ceiling_server.py", "--port", "{port}", "--onnx", str(onnx_path)]
    ceiling_features = "constant reply, no model: V2 parsing and input checks only; no auth, metrics or log"
    peers += [
        Peer(
            "ceiling-uvicorn", "ceiling: uvicorn + Starlette (+ grpc.aio)", "1 (gRPC in the same process)",
            ceiling_features, TRANSPORTS, [*ceiling, "--grpc-port", "{grpc_port}"], "/v2/health/ready", v2,
            "ceiling", checked=False,
        ),
        Peer(
            "ceiling-granian", "ceiling: granian + Starlette", "1 (granian, 1 worker)", ceiling_features,
            ("rest-json", "rest-binary"), [*ceiling, "--server", "granian"], "/v2/health/ready", v2,
            "ceiling", checked=False,
        ),
        Peer(
            "ceiling-granian-rsgi", "raw ceiling: granian RSGI, no framework", "1 (granian, 1 worker)",
            "constant reply, no model: the JSON body parsed (orjson); no routing, V2 validation, input checks, "
            "auth, metrics or log", ("rest-json",), [*ceiling, "--server", "granian-rsgi"], "/v2/health/ready",
            v2, "ceiling", checked=False,
        ),
    ]  # fmt: skip
    return peers


def missing_venv(peer: Peer) -> str | None:
    """Why ``peer`` cannot start here (its interpreter or command is missing), else None."""
    program = Path(peer.command[0])
    if program.is_absolute() and not program.exists():
        return f"{program} is missing: run `bash benchmarks/peers/setup_venvs.sh`"
    return None


# --- the run ----------------------------------------------------------------------------------------------


@dataclass
class PeerOutcome:
    peer: Peer
    status: str  # "measured", "failed: ...", "skipped: ..."
    points: list[Point] = field(default_factory=list)


def fill(text: str, ports: dict[str, int]) -> str:
    for name, port in ports.items():
        text = text.replace("{" + name + "}", str(port))
    return text


def measure_peer(
    peer: Peer,
    x: np.ndarray,
    expected: np.ndarray,
    transports: tuple[str, ...],
    rows: tuple[int, ...],
    concurrency: tuple[int, ...],
    duration: float,
) -> PeerOutcome:
    if (why := missing_venv(peer)) is not None:
        print(f"{peer.label}: skipped, {why}")
        return PeerOutcome(peer, f"skipped: {why}")
    ports = {"port": free_port(), "grpc_port": free_port(), "metrics_port": free_port()}
    command = [fill(part, ports) for part in peer.command]
    env = {k: fill(v, ports) for k, v in peer.env.items()} if peer.env else None
    base, grpc_target = f"http://127.0.0.1:{ports['port']}", f"127.0.0.1:{ports['grpc_port']}"
    print(
        f"{peer.label} on :{ports['port']}"
        + (f" (gRPC :{ports['grpc_port']})" if "grpc" in transports else "")
    )
    outcome = PeerOutcome(peer, "measured")
    try:
        with started(peer.key, command, base + peer.ready_path, env) as process:
            for transport in transports:
                try:
                    got = answer(peer, transport, base, grpc_target, x)
                except Exception as exc:
                    raise RuntimeError(f"{transport}: {exc}") from exc
                if peer.checked and (
                    got.shape != expected.shape or not np.allclose(got, expected, rtol=0, atol=TOLERANCE)
                ):
                    worst = float(np.max(np.abs(got - expected))) if got.shape == expected.shape else None
                    raise RuntimeError(
                        f"{transport}: {len(x)} rows scored differently from ONNX Runtime in-process "
                        f"(shape {got.shape} vs {expected.shape}, largest difference {worst}, tolerance {TOLERANCE})"
                    )
            for transport in transports:
                for n in rows:
                    sample = np.ascontiguousarray(x[:n])
                    load(peer, transport, base, grpc_target, sample, 8, WARMUP_S)
                    for c in concurrency:
                        cpu_before = tree_cpu_seconds(process.pid)
                        result = load(peer, transport, base, grpc_target, sample, c, duration)
                        cpu_us = 1e6 * (tree_cpu_seconds(process.pid) - cpu_before) / max(result.requests, 1)
                        outcome.points.append(Point(peer.key, transport, n, result, cpu_us))
                        print(
                            f"    {transport:>11} {n:>2} rows c={c:>3}: {result.rps:8.0f} req/s  "
                            f"p50 {result.p50_ms:6.2f} ms  p99 {result.p99_ms:7.2f} ms  "
                            f"server CPU {cpu_us:7.1f} us/req  errors {result.errors}"
                        )
    except Exception as exc:  # noqa: BLE001 - one peer's failure is reported, the others still run
        outcome.status = f"failed: {type(exc).__name__}: {exc}"
        print(f"    {outcome.status}")
    return outcome


def estimate_seconds(
    peers: list[Peer],
    transports: tuple[str, ...],
    rows: tuple[int, ...],
    concurrency: tuple[int, ...],
    duration: float,
) -> float:
    seconds = 30.0  # training, export and registration of the benchmark model
    for peer in peers:
        used = [t for t in peer.transports if t in transports]
        seconds += PEER_STARTUP_S + len(used) * len(rows) * (
            WARMUP_S + POINT_OVERHEAD_S + len(concurrency) * (duration + POINT_OVERHEAD_S)
        )
    return seconds


# --- the report -------------------------------------------------------------------------------------------


def at(points: list[Point], peer: str, transport: str, rows: int, c: int) -> Point | None:
    return next(
        (
            p
            for p in points
            if (p.peer, p.transport, p.rows, p.load.concurrency) == (peer, transport, rows, c)
        ),
        None,
    )


def best(points: list[Point], peers: list[Peer], kind: str, rows: int, c: int) -> Point | None:
    """The fastest (peer, transport) point of a kind of peer at ``rows`` and ``c``, errors-free first."""
    keys = {peer.key for peer in peers if peer.kind == kind}
    chosen = [p for p in points if p.peer in keys and p.rows == rows and p.load.concurrency == c]
    return max(chosen, key=lambda p: (p.load.errors == 0, p.load.rps), default=None)


def describe(point: Point) -> str:
    return f"{point.peer} {point.transport} {point.load.rps:,.0f} req/s"


def goal_lines(points: list[Point], peers: list[Peer]) -> list[str]:
    """The goals at c = 32, single row: each met or NOT met, with the figures (or why not judged).

    Judged for ``mlops serve``'s default server and, beside it, for ``--http-server granian``.
    """
    c = GOAL_CONCURRENCY
    ceiling = best(points, peers, "ceiling", 1, c)
    lines = ["| goal (c = 32, single row) | figures | ratio | verdict |", "|---|---|---|---|"]

    def ratio_line(goal: str, numerator: Point | None, denominator: Point | None, target: float) -> None:
        if numerator is None or denominator is None:
            lines.append(f"| {goal} | not measured in this run | - | not judged |")
            return
        ratio = numerator.load.rps / denominator.load.rps
        verdict = "met" if ratio >= target else "NOT met"
        lines.append(
            f"| {goal} | {describe(numerator)} vs {describe(denominator)} | {ratio:.2f}× | {verdict} |"
        )

    for kind, name in (("ours", "ours"), ("ours-granian", "ours on granian")):
        ours = best(points, peers, kind, 1, c)
        ratio_line(f"{name} ≥ {GOAL_VS_CEILING:g}× the fastest ceiling", ours, ceiling, GOAL_VS_CEILING)
        ratio_line(
            f"{name} ≥ {GOAL_VS_PYTHON_PEER:g}× the fastest Python peer",
            ours,
            best(points, peers, "python-peer", 1, c),
            GOAL_VS_PYTHON_PEER,
        )
        if ours is None or ceiling is None:
            lines.append(f"| {name}: p99 and server CPU | not measured in this run | - | not judged |")
            continue
        spread = ours.load.p99_ms / ours.load.p50_ms
        lines.append(
            f"| {name} p99 ≤ {GOAL_P99_OVER_P50:g}× p50 | {ours.transport}: {ours.load.p50_ms:.2f} / "
            f"{ours.load.p99_ms:.2f} ms | {spread:.2f}× | {'met' if spread <= GOAL_P99_OVER_P50 else 'NOT met'} |"
        )
        cost = ours.server_cpu_us / ceiling.server_cpu_us
        lines.append(
            f"| {name} server CPU ≤ {GOAL_CPU_VS_CEILING:g}× the fastest ceiling's | "
            f"{ours.server_cpu_us:.0f} vs {ceiling.server_cpu_us:.0f} µs/req ({ceiling.peer}) | {cost:.2f}× | "
            f"{'met' if cost <= GOAL_CPU_VS_CEILING else 'NOT met'} |"
        )
    ratio_line(
        f"gRPC ≥ {GOAL_GRPC_VS_CEILING:g}× the grpc.aio constant-reply ceiling",
        at(points, "ours", "grpc", 1, c),
        at(points, "ceiling-uvicorn", "grpc", 1, c),
        GOAL_GRPC_VS_CEILING,
    )
    on, off = at(points, "ours", "rest-json", 64, c), at(points, "ours-no-log", "rest-json", 64, c)
    if on is None or off is None:
        lines.append(
            f"| 64-row JSON, request log on ≥ {GOAL_LOG_ON_OFF:g}× off | not measured in this run | - | not judged |"
        )
    else:
        ratio = on.load.rps / off.load.rps
        verdict = "met" if ratio >= GOAL_LOG_ON_OFF else "NOT met"
        lines.append(
            f"| 64-row JSON (c = 32), request log on ≥ {GOAL_LOG_ON_OFF:g}× off | {on.load.rps:,.0f} vs {off.load.rps:,.0f} req/s | {ratio:.2f}× | {verdict} |"
        )
    lines.append(
        "| 64-row binary REST ≥ 0.8× ONNX Runtime in process (rows/s) | measured by `bench_protocols.py` "
        "(its rows table) | - | not judged here |"
    )
    return lines


def report(
    outcomes: list[PeerOutcome], command: str, load_before: tuple[float, ...], load_after: tuple[float, ...],
    seconds: float, duration: float,
) -> str:  # fmt: skip
    points = [p for o in outcomes for p in o.points]
    peers = [o.peer for o in outcomes]
    label = {o.peer.key: o.peer.label for o in outcomes}
    generator = "wrk" if wrk_available() else "Python fallback (install wrk for accuracy)"
    lines = [
        "# Serving peers",
        "",
        f"Command: `{command}`  ",
        f"Load average before: {' / '.join(f'{v:.2f}' for v in load_before)}; after: "
        f"{' / '.join(f'{v:.2f}' for v in load_after)} (1 / 5 / 15 min); {os.cpu_count()} CPUs; "
        f"{duration:g} s per point; run took {seconds:.0f} s.  ",
        f"HTTP load: {generator}; gRPC load: Python grpc.aio (`benchmarks/grpc_load.py`), 2 processes.  ",
        "A figure taken at load average > 1.5 is not a result.",
        "",
        "## Peers",
        "",
        "| peer | processes | features on | status |",
        "|---|---|---|---|",
    ]
    for o in outcomes:
        lines.append(f"| {o.peer.label} | {o.peer.processes} | {o.peer.features} | {o.status} |")
    lines += [
        "",
        "## Goals",
        "",
        *goal_lines(points, peers),
        "",
        "## Every point",
        "",
        "| peer | transport | rows | c | req/s | rows/s | p50 / p99 ms | server CPU µs/req | errors |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for p in points:
        lines.append(
            f"| {label[p.peer]} | {p.transport} | {p.rows} | {p.load.concurrency} | {p.load.rps:,.0f} | "
            f"{p.load.rps * p.rows:,.0f} | {p.load.p50_ms:.2f} / {p.load.p99_ms:.2f} | {p.server_cpu_us:.0f} | "
            f"{p.load.errors} |"
        )
    lines += ["", "![req/s against concurrency, single row](serving_peers.png)", ""]
    return "\n".join(lines)


def plot(outcomes: list[PeerOutcome], path: Path, command: str, load_before: tuple[float, ...], load_after: tuple[float, ...]) -> bool:  # fmt: skip
    """req/s against concurrency, single row, one line per peer and transport; False when nothing to plot."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(10, 6))
    drawn = False
    for o in outcomes:
        for transport in o.peer.transports:
            series = sorted(
                (p.load.concurrency, p.load.rps) for p in o.points if p.transport == transport and p.rows == 1
            )
            if not series:
                continue
            xs, ys = zip(*series, strict=True)
            style = "--" if o.peer.kind == "ceiling" else "-"
            axes.plot(xs, ys, style, marker="o", label=f"{o.peer.label}, {transport}")
            drawn = True
    if not drawn:
        plt.close(figure)
        return False
    axes.set_xscale("log", base=2)
    ticks = sorted({p.load.concurrency for o in outcomes for p in o.points})
    axes.set_xticks(ticks, [str(c) for c in ticks])
    axes.set_yscale("log")
    axes.set_xlabel("concurrent requests")
    axes.set_ylabel("requests/s (single row)")
    axes.set_title(
        f"Serving peers, single row — load avg {load_before[0]:.2f} before, {load_after[0]:.2f} after\n{command}",
        fontsize=8,
    )
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=7, loc="best")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return True


def parse_only(text: str, known: list[str]) -> list[str]:
    """``--only ours,mlserver`` → the peer keys, each checked against the known ones."""
    keys = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [key for key in keys if key not in known]
    if unknown or not keys:
        raise ValueError(f"--only {text!r}: unknown peer(s) {unknown}; choose from {', '.join(known)}")
    return keys


PEER_KEYS = [
    "ours",
    "ours-no-log",
    "ours-granian",
    "mlserver",
    "kserve",
    "bentoml",
    "mlflow",
    "ceiling-uvicorn",
    "ceiling-granian",
    "ceiling-granian-rsgi",
]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--duration", type=float, default=3.0, help="seconds of load per point (default 3)")
    parser.add_argument(
        "--only", default="", help=f"comma-separated peers to run, from: {', '.join(PEER_KEYS)}"
    )
    parser.add_argument("--transports", nargs="+", choices=TRANSPORTS, default=list(TRANSPORTS))
    parser.add_argument("--rows", type=int, nargs="+", default=list(ROWS), help="rows per request")
    parser.add_argument("--concurrency", type=int, nargs="+", default=list(CONCURRENCY))
    args = parser.parse_args()
    try:
        only = parse_only(args.only, PEER_KEYS) if args.only else PEER_KEYS
    except ValueError as exc:
        parser.error(str(exc))
    if max(args.rows) > 64 or min(args.rows) < 1:
        parser.error(f"--rows {args.rows}: each must be between 1 and 64 (the checked sample has 64 rows)")
    command = " ".join(["python -m benchmarks.bench_serving_peers", shlex.join(sys.argv[1:])]).strip()
    OUT.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()
    started_at = time.monotonic()
    print(f"HTTP load: {'wrk' if wrk_available() else 'python fallback'}; load average {load_before[0]:.2f}")

    print("building and registering the benchmark model ...")
    workspace_root = OUT / "peers-workspace"
    shutil.rmtree(workspace_root, ignore_errors=True)
    onnx_path = train_and_export(OUT / "peers-model", (128, 64), steps=60)
    tracking_uri = register_model(workspace_root, onnx_path)

    from mlops.data.sample_data import SampleDataConfig, generate
    from mlops.model.onnx_model import OnnxScorer

    scorer = OnnxScorer.load(onnx_path)
    x = np.ascontiguousarray(
        scorer.spec.encode(generate(SampleDataConfig(rows=64, seed=5, missing_rate=0.0)))
    )
    expected = np.asarray(scorer.predict_encoded(x), dtype=np.float32)

    peers = [
        p
        for p in build_peers(onnx_path, workspace_root, tracking_uri, secrets.token_urlsafe(24))
        if p.key in only
    ]
    transports, rows, concurrency = tuple(args.transports), tuple(args.rows), tuple(args.concurrency)
    estimate = estimate_seconds(peers, transports, rows, concurrency, args.duration)
    print(f"estimated run time: {estimate / 60:.1f} min ({len(peers)} peers, {args.duration:g} s per point)")

    outcomes = []
    for peer in peers:
        used = tuple(t for t in peer.transports if t in transports)
        if not used:
            continue
        outcomes.append(measure_peer(peer, x, expected, used, rows, concurrency, args.duration))

    load_after = os.getloadavg()
    seconds = time.monotonic() - started_at
    text = report(outcomes, command, load_before, load_after, seconds, args.duration)
    (OUT / "serving_peers.md").write_text(text)
    plotted = plot(outcomes, OUT / "serving_peers.png", command, load_before, load_after)
    (OUT / "serving_peers.json").write_text(
        json.dumps(
            {
                "command": command,
                "load_before": load_before,
                "load_after": load_after,
                "seconds": seconds,
                "peers": [
                    {
                        "key": o.peer.key,
                        "label": o.peer.label,
                        "status": o.status,
                        "features": o.peer.features,
                    }
                    for o in outcomes
                ],
                "points": [
                    {**asdict(p), "load": asdict(p.load)} for p in (q for o in outcomes for q in o.points)
                ],
            },
            indent=2,
        )
    )
    print(text)
    print(
        f"total {seconds:.0f} s (estimated {estimate:.0f} s); {OUT}/serving_peers.md"
        + (f", {OUT}/serving_peers.png" if plotted else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
