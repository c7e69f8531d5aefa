"""Per-task start-up: what a pipeline task imports before it works, what a gate's work costs, and each
recording task's real wall time in a local run.

Each task of a ``kfp.local`` run is a fresh ``python3 -m kfp.dsl.executor_main`` process
(``_KFP_RUNTIME=true``) that imports its component function's modules. For each
component this measures, in a fresh process, the time to import the executor plus the
modules the component's function imports, and lists the heavy libraries that import
pulls in (none should: they belong inside the work). The baseline in the same run is a
bare interpreter start. Then the combine-gates task's whole body (record the verdict on a
registered version in a SQLite MLflow store) is timed in parts: executor import, gate
modules, ``import mlflow``, and the work (store open + run + tags); then the same body recording
over REST to the store served by ``mlflow server`` (what a local run does), which
never imports MLflow. Last, ``mlops run training`` on a small sample, with the store served and
with it not (``MLOPS_SERVE_TRACKING=0``, the baseline, in the same run): each step's wall time as
the run recorded it (process start included). Everything, with the command and the load average
before and after, goes to ``benchmarks/.out/task_startup.md``.

    python benchmarks/bench_task_startup.py --repeat 3 --rows 5000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / ".out" / "task_startup.md"
RECORDING_STEPS = ("metrics-gate", "combine-gates", "promote-to-champion")
"""The training pipeline's steps whose own work is trivial (the target: <= 1 s each)."""

# component -> the modules its function body imports (components/<name>/component.py)
TASK_IMPORTS = {
    "prepare-data": "components.prepare_data.config components.prepare_data.data_source mlops.settings",
    "validate-data": "components.data_validation.config components.data_validation.suite_validation mlops.data.dataset "
    "mlops.settings mlops.tracking.store",
    "train-model": "components.train.config components.train.training_task mlops.data.dataset mlops.settings mlops.tracking.store "
    "training.config",
    "evaluate-model": "components.evaluate.holdout_evaluation mlops.data.dataset mlops.tracking.store",
    "export-onnx-model": "components.export_onnx.config components.export_onnx.verified_export mlops.settings",
    "register-model": "components.register.version_registration mlops.vocabulary mlops.tracking.store",
    "metrics-gate": "components.promotion_gate.promotion mlops.settings mlops.tracking.store",
    "validate-model": "components.model_validation.config components.model_validation.validation_gate mlops.data.dataset "
    "mlops.settings mlops.tracking.store",
    "combine-gates": "components.promotion_gate.combine mlops.gates mlops.tracking.store",
}
HEAVY = (
    "torch",
    "great_expectations",
    "evidently",
    "fairlearn",
    "mlflow",
    "sqlalchemy",
    "pandas",
    "sklearn",
    "onnxruntime",
    "onnx",
    "pyarrow",
    "matplotlib",
    "scipy",
    "optuna",
    "kubernetes",
    "boto3",
)

IMPORT_PROBE = """
import importlib, json, sys, time
t = time.perf_counter()
import kfp.dsl.executor_main
for name in sys.argv[1].split():
    importlib.import_module(name)
print(json.dumps({"seconds": time.perf_counter() - t, "heavy": [h for h in sys.argv[2].split() if h in sys.modules]}))
"""

GATE_PROBE = """
import json, sys, time
t0 = time.perf_counter()
import kfp.dsl.executor_main
t1 = time.perf_counter()
from components.promotion_gate.combine import combine, record_overall
from mlops.gates import Decision
from mlops.tracking.store import TrackingStore
t2 = time.perf_counter()
import mlflow
t3 = time.perf_counter()
ctx = TrackingStore(sys.argv[1], "bench", "bench", sys.argv[2])
decision = combine([Decision("metrics", "promote", "ok", {}), Decision("model_validation", "promote", "ok", {})])
record_overall(decision, "bench-model", "1", ctx)
t4 = time.perf_counter()
print(json.dumps({"executor": t1 - t0, "gate modules": t2 - t1, "import mlflow": t3 - t2, "work": t4 - t3}))
"""

SERVED_GATE_PROBE = """
import json, sys, time
t0 = time.perf_counter()
import kfp.dsl.executor_main
t1 = time.perf_counter()
from components.promotion_gate.combine import combine, record_overall
from mlops.gates import Decision
from mlops.tracking.store import TrackingStore
t2 = time.perf_counter()
ctx = TrackingStore.for_task({"tracking_uri": sys.argv[1], "experiment": "bench", "artifact_root": sys.argv[2]}, "bench")
assert ctx.served_url, "the store is not served: MLOPS_TRACKING_SERVED_AT is missing"
decision = combine([Decision("metrics", "promote", "ok", {}), Decision("model_validation", "promote", "ok", {})])
record_overall(decision, "bench-model", "1", ctx)
t3 = time.perf_counter()
assert "mlflow" not in sys.modules, "the served path imported mlflow"
print(json.dumps({"executor": t1 - t0, "gate modules": t2 - t1, "import mlflow": 0.0, "work (REST)": t3 - t2}))
"""


def _run(code: str, *args: str, environ: dict[str, str] | None = None) -> dict:
    env = {**(environ if environ is not None else os.environ), "_KFP_RUNTIME": "true"}
    out = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _bare() -> float:
    import time

    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - start


def _store(tmp: Path) -> tuple[str, str]:
    """A SQLite store holding version 1 of ``bench-model`` (what the gate records on)."""
    uri, root = f"sqlite:///{tmp}/mlflow.db", (tmp / "artifacts").as_uri()
    subprocess.run(
        [
            sys.executable,
            "-c",
            f"""
from mlops.tracking.store import TrackingStore
store = TrackingStore.from_uri({uri!r}, experiment="bench", artifact_root={root!r})
store.ensure_experiment()
store.create_version("bench-model", "file:///dev/null", None, {{}})
""",
        ],
        check=True,
        capture_output=True,
    )
    return uri, root


def _local_run(rows: int, serve: bool) -> dict[str, float]:
    """``mlops run training`` on ``rows`` sample rows in a fresh workspace; each step's wall seconds."""
    mlops = shutil.which("mlops", path=str(Path(sys.executable).parent))
    assert mlops, "the mlops console script is not installed in this environment"
    env = {**os.environ, "MLOPS_SERVE_TRACKING": "1" if serve else "0"}
    env.pop("MLFLOW_TRACKING_URI", None)
    with tempfile.TemporaryDirectory(prefix="bench-task-startup-") as tmp:
        out = subprocess.run(
            [mlops, "--workspace", f"{tmp}/ws", "run", "training", "--set", f"data.sample.rows={rows}",
             "--set", "train.epochs=1", "--set", "gate.auc_floor=0.5"],
            cwd=tmp, capture_output=True, text=True, env=env, check=False,
        )  # fmt: skip
        if out.returncode != 0:
            raise SystemExit(f"mlops run training failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
        (record,) = Path(tmp, "ws", "pipeline-runs").glob("*/mlops-run.json")
        steps = json.loads(record.read_text())["steps"]
        timings = {step["name"]: float(step["seconds"]) for step in steps}
        timings["(whole run)"] = float(json.loads(record.read_text())["seconds"])
        return timings


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rows", type=int, default=5000, help="sample rows of the local runs (0: skip them)")
    args = parser.parse_args()
    load_before = os.getloadavg()
    lines: list[str] = []

    def emit(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    bare = statistics.median(_bare() for _ in range(args.repeat))
    emit(f"bare interpreter start: {bare:.2f} s (median of {args.repeat})\n")
    emit("| task | executor + function imports (s, median) | x bare start | heavy libraries imported |")
    emit("| --- | ---: | ---: | --- |")
    for task, modules in TASK_IMPORTS.items():
        runs = [_run(IMPORT_PROBE, modules, " ".join(HEAVY)) for _ in range(args.repeat)]
        seconds = statistics.median(r["seconds"] for r in runs)
        emit(f"| {task} | {seconds:.2f} | {seconds / bare:.1f}x | {', '.join(runs[0]['heavy']) or 'none'} |")
    with tempfile.TemporaryDirectory() as tmp:
        uri, root = _store(Path(tmp))
        direct = [_run(GATE_PROBE, uri, root) for _ in range(args.repeat)]
        from mlops.tracking.served import serve_store

        environ = dict(os.environ)
        with serve_store(uri, root, Path(tmp) / "server.log", environ=environ) as server:
            server.wait_until_healthy()
            served = [_run(SERVED_GATE_PROBE, uri, root, environ=environ) for _ in range(args.repeat)]
    for title, parts in (
        ("store opened directly (before)", direct),
        ("store served, over REST (after)", served),
    ):
        emit(f"\ncombine-gates task body in a fresh process, {title} (median s):")
        emit("| part | seconds |")
        emit("| --- | ---: |")
        for key in parts[0]:
            emit(f"| {key} | {statistics.median(p[key] for p in parts):.2f} |")
        emit(f"| total | {statistics.median(sum(p.values()) for p in parts):.2f} |")
    if args.rows:
        served_run, direct_run = _local_run(args.rows, serve=True), _local_run(args.rows, serve=False)
        emit(f"\n`mlops run training` on {args.rows} sample rows, each step's wall time (s, one run each):")
        emit("| step | store served (after) | each task opens the store (before) |")
        emit("| --- | ---: | ---: |")
        for step in [*direct_run]:
            mark = " (recording only)" if step in RECORDING_STEPS else ""
            emit(f"| {step}{mark} | {served_run.get(step, float('nan')):.2f} | {direct_run[step]:.2f} |")
    load_after = os.getloadavg()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    command = " ".join(["python", "benchmarks/bench_task_startup.py", *sys.argv[1:]])
    OUT.write_text(
        f"## Per-task start-up (`{command}`)\n\n"
        f"load average before {load_before[0]:.2f} / {load_before[1]:.2f} / {load_before[2]:.2f}, "
        f"after {load_after[0]:.2f} / {load_after[1]:.2f} / {load_after[2]:.2f} (1/5/15 min)\n\n"
        + "\n".join(lines)
        + "\n"
    )
    print(f"\nwritten to {OUT}")


if __name__ == "__main__":
    main()
