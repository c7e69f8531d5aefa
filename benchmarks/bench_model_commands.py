"""The commands that open a registered model, as a user runs them: ``mlops score`` to its end and ``mlops serve``
to its first ready answer, from this tree and from another checkout, alternating.

Setup (not timed): ``--rows`` rows × 20 features from the sample generator as Parquet files of ``--file-rows``
rows, and a small model trained, exported, registered (signed) and made champion in a fresh workspace
(``benchmarks/bench_batch_scoring.py``'s and ``benchmarks/bench_serving.py``'s helpers). Timed, each in a fresh
process: the whole ``python -m cli.main score --model …@champion --data … --out …``, and ``python -m cli.main
serve --model-name …`` from its start until ``/v2/health/ready`` answers 200 (then it is stopped); from the
baseline tree (``--baseline-tree``, e.g. a ``git worktree`` of an earlier commit, run with this venv:
``PYTHONPATH`` puts its sources first) and from this one, alternating, ``--repeats`` times each, a fresh
output folder every time; the first run of each tree is untimed (it fills the model cache). The
difference is the commands' fixed cost: start-up, settings, registry reads, the model's verification.

    ../shared/recipes/quiet.sh .venv/bin/python -m benchmarks.bench_model_commands --baseline-tree /tmp/wt-base
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import tree_comparison

MODEL = "bench-model"  # benchmarks.bench_serving.MODEL, which register_model registers


def score(tree: Path, workspace: Path, data: Path, out: Path) -> float:
    """Seconds of one ``mlops score`` from ``tree``'s sources (run from outside both trees)."""
    shutil.rmtree(out, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(tree)}
    command = [sys.executable, "-m", "cli.main", "--workspace", str(workspace), "score"]
    command += ["--model", f"{MODEL}@champion", "--data", str(data), "--out", str(out), "--no-progress"]
    started = time.monotonic()
    done = subprocess.run(command, cwd=out.parent, env=env, capture_output=True, text=True)
    seconds = time.monotonic() - started
    if done.returncode != 0:
        raise RuntimeError(f"mlops score from {tree} failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    return seconds


def serve_ready(tree: Path, workspace: Path, scratch: Path) -> float:
    """Seconds from starting ``mlops serve`` (``tree``'s sources) until it answers ready; it is stopped after."""
    import urllib.error
    import urllib.request

    from benchmarks.bench_serving import free_port

    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(tree)}
    command = [sys.executable, "-m", "cli.main", "--workspace", str(workspace), "serve"]
    command += ["--model-name", MODEL, "--port", str(port)]
    log = scratch / "serve.log"
    started = time.monotonic()
    with log.open("w") as output:
        process = subprocess.Popen(command, cwd=scratch, env=env, stdout=output, stderr=subprocess.STDOUT)
    try:
        while True:
            if process.poll() is not None or time.monotonic() - started > 120:
                raise RuntimeError(f"mlops serve from {tree} did not get ready:\n{log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/health/ready", timeout=1) as answer:
                    if answer.status == 200:
                        return time.monotonic() - started
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.05)
    finally:
        process.terminate()
        process.wait(timeout=30)


def main() -> int:
    parser = tree_comparison.parser(__doc__, repeats=3)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--file-rows", type=int, default=500_000)
    args = parser.parse_args()
    from benchmarks.bench_batch_scoring import write_input
    from benchmarks.bench_serving import register_model, train_and_export

    root = Path(tempfile.mkdtemp(prefix="bench-model-commands-"))
    try:
        write_input(root / "in", args.rows, args.file_rows)
        register_model(root / "workspace", train_and_export(root / "onnx", (64, 32), steps=50))

        def both(label: str, tree: Path) -> dict[str, float]:
            return {
                "score": score(tree, root / "workspace", root / "in", root / "out"),
                "serve": serve_ready(tree, root / "workspace", root),
            }

        runs = tree_comparison.alternate(
            args.baseline_tree,
            args.repeats,
            both,
            lambda figures: ", ".join(f"{name} {s:.2f} s" for name, s in figures.items()),
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print()
    print(
        f"| tree | `mlops score`, {args.rows:,} rows: median (min–max) s | `mlops serve` until ready: median (min–max) s |"
    )
    print("|---|---:|---:|")
    for label, done in runs.items():
        cells = []
        for name in ("score", "serve"):
            values = [figures[name] for figures in done]
            cells.append(f"{statistics.median(values):.2f} ({min(values):.2f}–{max(values):.2f})")
        print(f"| {label} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
