"""Per-task start-up: what a pipeline task imports before it works, and what a gate's work costs.

Each task of a ``kfp.local`` run is a fresh ``python3 -m kfp.dsl.executor_main`` process
(``_KFP_RUNTIME=true``) that imports its component function's modules. For each
component this measures, in a fresh process, the time to import the executor plus the
modules the component's function imports, and lists the heavy libraries that import
pulls in (none should: they belong inside the work). The baseline in the same run is a
bare interpreter start. Then the combine-gates task's whole body (record the verdict on a
registered version in a SQLite MLflow store) is timed in parts: executor import, gate
modules, ``import mlflow``, and the work (store open + run + tags).

    python benchmarks/bench_task_startup.py --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

# component -> the modules its function body imports (components/<name>/component.py)
TASK_IMPORTS = {
    "prepare-data": "components.prepare_data.config components.prepare_data.prepare_data mlops.settings",
    "validate-data": "components.data_validation.config components.data_validation.data_validation mlops.data.dataset "
    "mlops.settings mlops.tracking.store",
    "train-model": "components.train.config components.train.train mlops.data.dataset mlops.settings mlops.tracking.store "
    "training.config",
    "evaluate-model": "components.evaluate.evaluate mlops.data.dataset mlops.tracking.store",
    "export-onnx-model": "components.export_onnx.config components.export_onnx.export_onnx mlops.settings",
    "register-model": "components.register.register mlops.vocabulary mlops.tracking.store",
    "metrics-gate": "components.promotion_gate.promotion_gate mlops.settings mlops.tracking.store",
    "validate-model": "components.model_validation.config components.model_validation.model_validation mlops.data.dataset "
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


def _run(code: str, *args: str) -> dict:
    env = {**os.environ, "_KFP_RUNTIME": "true"}
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
client = TrackingStore.from_uri({uri!r}).client
client.create_experiment("bench", artifact_location={root!r} + "/bench")
client.create_registered_model("bench-model")
client.create_model_version("bench-model", "file:///dev/null")
""",
        ],
        check=True,
        capture_output=True,
    )
    return uri, root


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    bare = statistics.median(_bare() for _ in range(args.repeat))
    print(f"bare interpreter start: {bare:.2f} s (median of {args.repeat})\n")
    print("| task | executor + function imports (s, median) | x bare start | heavy libraries imported |")
    print("| --- | ---: | ---: | --- |")
    for task, modules in TASK_IMPORTS.items():
        runs = [_run(IMPORT_PROBE, modules, " ".join(HEAVY)) for _ in range(args.repeat)]
        seconds = statistics.median(r["seconds"] for r in runs)
        print(f"| {task} | {seconds:.2f} | {seconds / bare:.1f}x | {', '.join(runs[0]['heavy']) or 'none'} |")
    with tempfile.TemporaryDirectory() as tmp:
        uri, root = _store(Path(tmp))
        parts = [_run(GATE_PROBE, uri, root) for _ in range(args.repeat)]
    print("\ncombine-gates task body, in a fresh process (median s):")
    print("| part | seconds |")
    print("| --- | ---: |")
    for key in parts[0]:
        print(f"| {key} | {statistics.median(p[key] for p in parts):.2f} |")
    total = statistics.median(sum(p.values()) for p in parts)
    print(f"| total | {total:.2f} |")


if __name__ == "__main__":
    main()
