"""``mlops score`` as a user runs it, from the command line: this tree against another checkout, alternating.

Setup (not timed): ``--rows`` rows × 20 features from the sample generator as Parquet files of ``--file-rows``
rows, and a small model trained, exported, registered (signed) and made champion in a fresh workspace
(``benchmarks/bench_batch_scoring.py``'s and ``benchmarks/bench_serving.py``'s helpers). Timed: the whole
command, ``python -m cli.main score --model …@champion --data … --out …`` in a fresh process, from the
baseline tree (``--baseline-tree``, e.g. a ``git worktree`` of an earlier commit, run with this venv:
``PYTHONPATH`` puts its sources first) and from this one, alternating, ``--repeats`` times each, a fresh
output folder every time; the first run of each tree is untimed (it fills the model cache). The
difference is the command's fixed cost: start-up, settings, registry reads, the model's verification.

    ../shared/recipes/quiet.sh .venv/bin/python -m benchmarks.bench_score_command --baseline-tree /tmp/wt-base
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


def main() -> int:
    parser = tree_comparison.parser(__doc__, repeats=3)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--file-rows", type=int, default=500_000)
    args = parser.parse_args()
    from benchmarks.bench_batch_scoring import write_input
    from benchmarks.bench_serving import register_model, train_and_export

    root = Path(tempfile.mkdtemp(prefix="bench-score-command-"))
    try:
        write_input(root / "in", args.rows, args.file_rows)
        register_model(root / "workspace", train_and_export(root / "onnx", (64, 32), steps=50))
        seconds = tree_comparison.alternate(
            args.baseline_tree,
            args.repeats,
            lambda label, tree: score(tree, root / "workspace", root / "in", root / "out"),
            lambda figure: f"{figure:.2f} s",
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print()
    print(f"| tree | `mlops score`, {args.rows:,} rows: median s | min s | max s |")
    print("|---|---:|---:|---:|")
    for label, runs in seconds.items():
        print(f"| {label} | {statistics.median(runs):.2f} | {min(runs):.2f} | {max(runs):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
