"""Serving benchmark: our server vs `mlflow models serve`, kserve's ModelServer and the protocol ceiling.

Same registered model, same machine, same run; load comes from a separate process
(wrk, or the Python fallback in ``serving_load.py``) against 127.0.0.1 only, for a
bounded time per point. Also measures raw in-process ONNX Runtime at the same batch
sizes, and INT8 vs FP32 in-process throughput (the default model and a wider one).

    .venv/bin/python -m benchmarks.bench_serving [--duration 4] [--kserve-python PATH]   # from the repo root

kserve 0.21 pins pandas 2.x, so its ModelServer runs from its own virtual
environment (``python3.11 -m venv ~/.cache/mlops-bench/kserve-venv &&
~/.cache/mlops-bench/kserve-venv/bin/pip install kserve==0.21.0 onnxruntime==1.31.1``);
without it that row is skipped with a message. Results: a markdown table on stdout
and ``benchmarks/.out/serving.json``. Runtime ≈ 4-5 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from benchmarks.serving_load import LoadResult, run_load, wrk_available

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / ".out"
MODEL = "bench-model"
OURS = "ours (`mlops serve` defaults + bearer token: batching, request log 100%)"
OURS_NO_LOG = "ours, request log off"
OURS_UNBATCHED = "ours, request log off, batching off"
OURS_WORKERS = "ours, defaults with --workers 2 (rollout admin off)"
OURS_GRANIAN = "ours on granian RSGI (`--http-server granian`, defaults otherwise)"
PROFILED = {OURS: "uvicorn", OURS_GRANIAN: "granian"}
"""The servers ``--profile`` samples, and the name of each one's profile file."""
CEILING = "protocol ceiling (same stack, constant reply)"
CEILING_RAW = "raw ceiling (JSON parsed, constant reply, no framework)"
KSERVE = "kserve 0.21 ModelServer (ORT in predict, logging off)"
MLFLOW = "mlflow models serve (default, 1 worker)"
TOKEN = "bench-token"
"""Every ``mlops serve`` here runs with ``--auth-token`` and is sent the token: a production server checks one."""
TOKEN_FLAGS = ("--auth-token", TOKEN)
AUTHORIZED = {"Authorization": f"Bearer {TOKEN}"}
TARGET_VS_MLFLOW = 5.0
TARGET_VS_CEILING = 0.5
TARGET_INT8 = 1.3


@dataclass(frozen=True)
class Target:
    """One server to load: how to start it ("{port}" is filled in) and what to send it."""

    label: str
    command: list[str]
    ready_path: str
    infer_path: str
    body: bytes
    check: Callable[[dict[str, Any]], float]
    env: dict[str, str] | None = None


def v2_json_body(x: np.ndarray) -> bytes:
    """A V2 (Open Inference Protocol) JSON request of the rows ``x``, as one FP32 ``features`` tensor."""
    tensor = {"name": "features", "shape": list(x.shape), "datatype": "FP32", "data": x.ravel().tolist()}
    return json.dumps({"inputs": [tensor]}).encode()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def train_and_export(directory: Path, hidden_units: tuple[int, ...], steps: int) -> Path:
    import torch

    from mlops.data.features import FeatureSpec
    from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
    from training.config import ModelConfig
    from training.model import TabularNet
    from training.onnx_export import export_onnx

    frame = generate(SampleDataConfig(rows=5000, seed=0))
    spec = FeatureSpec.fit(frame, SAMPLE_SCHEMA)
    torch.manual_seed(0)
    model = TabularNet(spec, ModelConfig(hidden_units=hidden_units))
    x = torch.from_numpy(spec.encode(frame))
    y = torch.tensor(frame[SAMPLE_SCHEMA.label].to_numpy(), dtype=torch.float32)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(steps):
        optimizer.zero_grad()
        torch.nn.functional.binary_cross_entropy_with_logits(model(x), y).backward()
        optimizer.step()
    return export_onnx(model, directory / "model.onnx")


def register_model(workspace_root: Path, onnx_path: Path) -> str:
    from components.register.version_registration import register_onnx_model
    from mlops.data.sample_data import SampleDataConfig, generate
    from mlops.tracking.store import TrackingStore
    from mlops.vocabulary import Lineage
    from mlops.workspace import Workspace

    workspace = Workspace(workspace_root).create()
    store = TrackingStore(workspace.tracking_uri, "bench", "bench", workspace.artifact_root)
    lineage = Lineage("bench", "", "", "", "0.1.0", "")
    example = generate(SampleDataConfig(rows=10, seed=1))
    registered = register_onnx_model(onnx_path.parent, example, MODEL, lineage, store)
    store.move_alias(MODEL, "champion", registered.version, None, reason="benchmark set-up")
    return workspace.tracking_uri


def tree_cpu_seconds(root: int) -> float:
    """User + system CPU seconds of ``root`` and all its descendants (Linux /proc)."""
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry.name)] = int(fields[1])
        times[int(entry.name)] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    tree, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent and pid not in tree]
        tree.update(children)
        frontier.extend(children)
    return sum(times.get(pid, 0.0) for pid in tree)


@contextmanager
def started(
    label: str, command: list[str], ready_url: str, env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    log_path = OUT / f"{label.replace(' ', '_').replace('/', '_')}.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"{label} exited with {process.returncode}; see {log_path}")
            try:
                if httpx.get(ready_url, timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{label} not ready after 120 s; see {log_path}")
            time.sleep(0.2)
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def measure(
    server: subprocess.Popen[bytes],
    url: str,
    body: bytes,
    check: Callable[[dict[str, Any]], float],
    expected: float,
    args: argparse.Namespace,
    headers: dict[str, str] | None = None,
) -> list[tuple[LoadResult, float]]:
    """Load at each concurrency; each point also reports the server's CPU µs per request."""
    answer = httpx.post(
        url, content=body, headers={"Content-Type": "application/json", **(headers or {})}, timeout=10
    )
    answer.raise_for_status()
    got = check(answer.json())
    if abs(got - expected) > 1e-5:
        raise RuntimeError(f"{url} answered {got}, ONNX Runtime says {expected}: not the same model")
    run_load(url, body, 8, 1.0, headers)  # warm-up: connection set-up, lazy imports, allocator
    results = []
    for concurrency in args.concurrency:
        cpu_before = tree_cpu_seconds(server.pid)
        r = run_load(url, body, concurrency, args.duration, headers)
        cpu_us = 1e6 * (tree_cpu_seconds(server.pid) - cpu_before) / max(r.requests, 1)
        results.append((r, cpu_us))
        print(
            f"    c={r.concurrency:>2}: {r.rps:8.0f} req/s  p50 {r.p50_ms:6.2f} ms  p99 {r.p99_ms:6.2f} ms  "
            f"server CPU {cpu_us:6.1f} us/req  errors {r.errors}"
        )
    return results


def profile_server(
    server: subprocess.Popen[bytes],
    url: str,
    body: bytes,
    args: argparse.Namespace,
    name: str,
    headers: dict[str, str] | None = None,
) -> list[str]:
    """py-spy on the server's processes (its workers too) while it answers one more c=32 load; the frames'
    largest shares, written to ``serving.<name>.pyspy.txt``."""
    import signal

    from benchmarks.pyspy_shares import record, table

    path = OUT / f"serving.{name}.pyspy.txt"
    spy = record(server.pid, path, subprocesses=True)
    time.sleep(1.0)  # py-spy attached before the load starts
    run_load(url, body, 32, args.duration, headers)
    spy.send_signal(signal.SIGINT)
    _, errors = spy.communicate(timeout=60)
    if not path.is_file():
        raise RuntimeError(f"py-spy wrote no profile of pid {server.pid}: {errors.decode()[-500:]}")
    return table(path, top=15)


def rows_per_second(session: Any, x: np.ndarray, seconds: float = 1.0) -> float:
    session.run(["probability"], {"features": x})
    calls, started_at = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - started_at) < seconds:
        for _ in range(20):
            session.run(["probability"], {"features": x})
        calls += 20
    return calls * len(x) / elapsed


def session(path: Path) -> Any:
    import onnxruntime as ort

    from serving.runtime import session_options

    return ort.InferenceSession(str(path), session_options(1, 1), providers=["CPUExecutionProvider"])


def int8_speedups(fp32_path: Path, x: np.ndarray, batches: tuple[int, ...]) -> dict[str, Any]:
    from components.quantize.quantizer import QuantizeConfig, quantize_onnx

    int8_path = quantize_onnx(fp32_path, fp32_path.with_name("model.int8.onnx"), QuantizeConfig())
    fp32, int8 = session(fp32_path), session(int8_path)
    out: dict[str, Any] = {}
    for batch in batches:
        rows = np.ascontiguousarray(np.resize(x, (batch, x.shape[1])))
        a, b = rows_per_second(fp32, rows), rows_per_second(int8, rows)
        out[str(batch)] = {"fp32_rows_s": a, "int8_rows_s": b, "speedup": b / a}
    return out


def serve_command(workspace_root: Path, model: str) -> list[str]:
    """``mlops serve`` of ``model``'s champion from a workspace (add ``--port {port}`` and flags)."""
    return [
        sys.executable,
        "-m",
        "cli.commands.serve",
        "--workspace",
        str(workspace_root),
        "--model-name",
        model,
    ]


def quiet_serve_command(workspace_root: Path, model: str, port: int, *flags: str) -> list[str]:
    """:func:`serve_command` on ``port`` with no request log and no registry polling (a benchmark's server
    scores the one version it started with), then ``flags``."""
    return [
        *serve_command(workspace_root, model),
        "--port",
        str(port),
        "--no-request-log",
        "--reload-interval-s",
        "0",
        *flags,
    ]


def mlflow_serve_command(python: str, tracking_uri: str) -> tuple[list[str], dict[str, str]]:
    """``mlflow models serve`` of the champion (``{port}`` filled in later) and the environment it needs."""
    command = [
        python, "-m", "mlflow", "models", "serve", "-m", f"models:/{MODEL}@champion",
        "--env-manager", "local", "-h", "127.0.0.1", "-p", "{port}",
    ]  # fmt: skip
    # mlflow execs `uvicorn` from PATH: the venv's bin must be on it.
    env = {
        **os.environ,
        "MLFLOW_TRACKING_URI": tracking_uri,
        "PATH": f"{Path(python).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    return command, env


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--duration", type=float, default=4.0, help="seconds of load per point")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument(
        "--kserve-python", type=Path, default=Path.home() / ".cache/mlops-bench/kserve-venv/bin/python"
    )
    parser.add_argument("--skip-mlflow", action="store_true")
    parser.add_argument(
        "--only",
        nargs="+",
        default=[],
        metavar="TEXT",
        help="load only the servers whose label contains one of these texts (e.g. ours ceiling)",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="after our server's points, one more c=32 load under py-spy (not timed): where its time goes",
    )
    parser.add_argument("--wide", default="1024,1024,512", help="hidden units of the wider INT8 model")
    args = parser.parse_args()
    if 32 not in args.concurrency:
        parser.error("--concurrency must include 32 (the targets are judged there)")
    OUT.mkdir(parents=True, exist_ok=True)
    print(
        f"load generator: {'wrk' if wrk_available() else 'python fallback (apt-get install wrk for accuracy)'}"
    )

    started_at = time.monotonic()
    print("building and registering the benchmark model ...")
    workspace_root = OUT / "workspace"
    if workspace_root.exists():
        import shutil

        shutil.rmtree(workspace_root)
    fp32_path = train_and_export(OUT / "model-default", (128, 64), steps=60)
    tracking_uri = register_model(workspace_root, fp32_path)
    wide = tuple(int(w) for w in args.wide.split(","))
    wide_path = train_and_export(OUT / "model-wide", wide, steps=5)

    from mlops.data.sample_data import SampleDataConfig, generate
    from mlops.model.onnx_model import OnnxScorer

    scorer = OnnxScorer.load(fp32_path)
    frame = generate(SampleDataConfig(rows=256, seed=5, missing_rate=0.0))
    x = scorer.spec.encode(frame)
    row = [float(v) for v in x[0]]
    expected = float(scorer.predict_encoded(x[:1])[0])
    v2_body = json.dumps(
        {"inputs": [{"name": "features", "shape": [1, len(row)], "datatype": "FP32", "data": row}]}
    ).encode()
    v2_check: Callable[[dict[str, Any]], float] = lambda body: float(body["outputs"][0]["data"][0])  # noqa: E731

    python = sys.executable
    ours = [*serve_command(workspace_root, MODEL), *TOKEN_FLAGS]
    v2_path = f"/v2/models/{MODEL}/infer"
    ready = "/v2/health/ready"
    mlflow_body = json.dumps({"inputs": [row]}).encode()
    targets = [
        Target(OURS, [*ours, "--port", "{port}"], ready, v2_path, v2_body, v2_check),
        Target(
            OURS_NO_LOG, [*ours, "--port", "{port}", "--no-request-log"], ready, v2_path, v2_body, v2_check
        ),
        Target(
            OURS_GRANIAN,
            [*ours, "--port", "{port}", "--http-server", "granian"],
            ready,
            v2_path,
            v2_body,
            v2_check,
        ),
        Target(
            OURS_WORKERS,
            [*ours, "--port", "{port}", "--workers", "2", "--no-rollout-admin"],
            ready,
            v2_path,
            v2_body,
            v2_check,
        ),
        Target(
            OURS_UNBATCHED,
            [*ours, "--port", "{port}", "--no-request-log", "--max-batch-size", "1"],
            ready,
            v2_path,
            v2_body,
            v2_check,
        ),
        Target(
            CEILING,
            [python, "benchmarks/ceiling_server.py", "--port", "{port}", "--width", str(len(row))],
            ready,
            v2_path,
            v2_body,
            lambda body: expected,
        ),
        *(
            Target(
                f"{CEILING_RAW} ({server})",
                [python, "benchmarks/ceiling_server.py", "--port", "{port}", "--server", server],
                "/v2/health/ready",
                v2_path,
                v2_body,
                lambda body: expected,
            )
            for server in ("granian-raw", "granian-rsgi", "uvicorn-raw")
        ),
    ]
    if args.kserve_python.is_file():
        command = [
            str(args.kserve_python), "benchmarks/kserve_server.py", "--model_path", str(fp32_path),
            "--model_name", MODEL, "--http_port", "{port}", "--enable_grpc", "false",
            "--enable_latency_logging", "false",
        ]  # fmt: skip
        targets.append(Target(KSERVE, command, ready, v2_path, v2_body, v2_check))
    else:
        print(f"skipping kserve: no interpreter at {args.kserve_python} (see this script's docstring)")
    if not args.skip_mlflow:
        command, env = mlflow_serve_command(python, tracking_uri)
        # The pyfunc ONNX flavor answers {"predictions": {"probability": [...]}} for a named output.
        check = lambda body: float(np.ravel(body["predictions"]["probability"])[0])  # noqa: E731
        targets.append(Target(MLFLOW, command, "/ping", "/invocations", mlflow_body, check, env))

    if args.only:
        targets = [t for t in targets if any(text in t.label for text in args.only)]
    servers: dict[str, list[tuple[LoadResult, float]]] = {}
    profile_lines: list[str] = []
    for target in targets:
        port = free_port()
        print(f"{target.label} on :{port}")
        command = [part.replace("{port}", str(port)) for part in target.command]
        base = f"http://127.0.0.1:{port}"
        with started(target.label, command, base + target.ready_path, target.env) as process:
            headers = AUTHORIZED if TOKEN in target.command else None
            servers[target.label] = measure(
                process, base + target.infer_path, target.body, target.check, expected, args, headers
            )
            if args.profile and target.label in PROFILED:
                name = PROFILED[target.label]
                profile_lines += [f"\n{target.label} (`serving.{name}.pyspy.txt`):\n"]
                profile_lines += profile_server(
                    process, base + target.infer_path, target.body, args, name, headers
                )

    print("raw in-process ONNX Runtime ...")
    fp32_session = session(fp32_path)
    raw = {}
    for batch in (1, 8, 32):
        rows_s = rows_per_second(fp32_session, np.ascontiguousarray(x[:batch]))
        raw[str(batch)] = {"calls_s": rows_s / batch, "rows_s": rows_s, "us_per_call": 1e6 * batch / rows_s}
    print("INT8 vs FP32 in-process ...")
    int8 = {
        "default (128,64)": int8_speedups(fp32_path, x, (1, 256)),
        f"wide {wide}": int8_speedups(wide_path, x, (1, 256)),
    }

    report = summarise(servers, raw, int8)
    if args.profile:
        report += "\n\nWhere our server's time goes (one more c=32 load under py-spy, not timed):\n\n"
        report += "\n".join(profile_lines) + "\n"
    print(report)
    (OUT / "serving.md").write_text(report)
    results = {
        "servers": {
            k: [{**asdict(r), "server_cpu_us_per_request": cpu} for r, cpu in v] for k, v in servers.items()
        },
        "raw_ort": raw,
        "int8": int8,
        "seconds": time.monotonic() - started_at,
    }
    (OUT / "serving.json").write_text(json.dumps(results, indent=2))
    print(f"total {time.monotonic() - started_at:.0f} s; results in {OUT}/serving.json")
    return 0


def summarise(
    servers: dict[str, list[tuple[LoadResult, float]]], raw: dict[str, Any], int8: dict[str, Any]
) -> str:
    concurrencies = [r.concurrency for r, _ in next(iter(servers.values()))]
    lines = [
        "| server | "
        + " | ".join(f"req/s c={c}" for c in concurrencies)
        + " | p50 / p99 ms @32 | server CPU µs/req @32 | errors |",
        "|---" * (len(concurrencies) + 4) + "|",
    ]
    at32: dict[str, LoadResult] = {}
    for label, results in servers.items():
        last, cpu = next((r, cpu) for r, cpu in results if r.concurrency == 32)
        at32[label] = last
        cells = " | ".join(f"{r.rps:,.0f}" for r, _ in results)
        errors = sum(r.errors for r, _ in results)
        lines.append(f"| {label} | {cells} | {last.p50_ms:.2f} / {last.p99_ms:.2f} | {cpu:.0f} | {errors} |")

    lines += ["", "| target | measured | ratio | met |", "|---|---|---|---|"]
    for label in (OURS, OURS_GRANIAN, OURS_WORKERS, OURS_NO_LOG, OURS_UNBATCHED):
        ours = at32.get(label)
        for other, target in ((MLFLOW, TARGET_VS_MLFLOW), (CEILING, TARGET_VS_CEILING), (KSERVE, None)):
            if ours is None or other not in at32:
                continue
            ratio = ours.rps / at32[other].rps
            goal = f"≥ {target:g}× " if target else ""
            met = "yes" if target is None or ratio >= target else "NO"
            lines.append(
                f"| {label} {goal}vs {other.split(' (')[0]} @32 | {ours.rps:,.0f} vs {at32[other].rps:,.0f} req/s | "
                f"{ratio:.2f}× | {met if target else '(reference)'} |"
            )
        for other in (k for k in at32 if k.startswith(CEILING_RAW)):
            if ours is not None:
                ratio = ours.rps / at32[other].rps
                lines.append(
                    f"| {label} vs {other} @32 | {ours.rps:,.0f} vs {at32[other].rps:,.0f} req/s | "
                    f"{ratio:.2f}× | (reference) |"
                )
    for model, per_batch in int8.items():
        for batch, figures in per_batch.items():
            lines.append(
                f"| INT8 ≥ {TARGET_INT8}× FP32, {model}, batch {batch} | {figures['int8_rows_s']:,.0f} vs "
                f"{figures['fp32_rows_s']:,.0f} rows/s | {figures['speedup']:.2f}× | "
                f"{'yes' if figures['speedup'] >= TARGET_INT8 else 'NO'} |"
            )
    lines += ["", "| raw ORT (1 thread), batch | calls/s | rows/s | µs/call |", "|---|---|---|---|"]
    for batch, figures in raw.items():
        lines.append(
            f"| {batch} | {figures['calls_s']:,.0f} | {figures['rows_s']:,.0f} | {figures['us_per_call']:.1f} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
