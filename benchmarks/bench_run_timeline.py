"""Where a second ``mlops run training`` spends its time outside the steps: before the first, after the last.

Runs the training pipeline on the built-in sample (5,000 rows) as ``./run.sh`` does, from this tree and,
as the baseline in the same session, from another checkout (``--baseline-tree``, e.g. a ``git worktree``
of an earlier commit, run with this venv: ``PYTHONPATH`` puts its sources first). Each tree gets its own
workspace, run once untimed (the store is created) and then ``--repeats`` times, alternating between the
trees. Every output line is stamped with the seconds since the command started, which gives: the header,
the first step's start (its end minus its duration), the last step's end, the summary ("Run finished")
and the process's exit.

    ../shared/recipes/quiet.sh .venv/bin/python -m benchmarks.bench_run_timeline --baseline-tree /work/wt-base
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import tree_comparison

STEP = re.compile(r"^\s+ok\s+(\S+)\s+([\d.]+)s")
FINISHED = re.compile(r"^Run finished in ([\d.]+)s")
STEP_PREFIX = "step "
"""Marks that are a step's own duration (``step <name>``), not a time since start."""


def timeline(tree: Path, workspace: Path) -> dict[str, float]:
    """One run from ``tree``'s sources: seconds since start of each landmark."""
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONUNBUFFERED": "1"}
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "--workspace", str(workspace), "run", "training"],
        cwd=tree,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    marks: dict[str, float] = {}
    for line in process.stdout:
        at = time.monotonic() - started
        if line.startswith("Running pipeline"):
            marks["header"] = at
        elif (step := STEP.match(line)) is not None:
            marks.setdefault("first step start", at - float(step.group(2)))
            marks["last step end"] = at
            marks[STEP_PREFIX + step.group(1)] = float(step.group(2))
        elif line.startswith("Run finished"):
            marks["summary"] = at
            if (finished := FINISHED.match(line)) is not None:
                marks["pipeline"] = float(finished.group(1))
    if process.wait() != 0:
        raise RuntimeError(f"mlops run training from {tree} failed (exit {process.returncode})")
    marks["exit"] = time.monotonic() - started
    return marks


def main() -> int:
    args = tree_comparison.parser(__doc__, repeats=2).parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-run-timeline-"))
    try:
        runs = tree_comparison.alternate(
            args.baseline_tree,
            args.repeats,
            lambda label, tree: timeline(tree, root / label.replace(" ", "-")),
            lambda marks: ", ".join(
                f"{k} {v:.2f}" for k, v in marks.items() if not k.startswith(STEP_PREFIX)
            ),
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print()
    print("| tree | first step starts s | last step ends s | summary printed s | process exits s | "
          "last step → summary s | last step → exit s |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, done in runs.items():
        figures = [
            statistics.median(m[key] for m in done)
            for key in ("first step start", "last step end", "summary", "exit")
        ]
        figures.append(statistics.median(m["summary"] - m["last step end"] for m in done))
        figures.append(statistics.median(m["exit"] - m["last step end"] for m in done))
        print(f"| {label} | " + " | ".join(f"{figure:.2f}" for figure in figures) + " |")
    print()
    labels = list(runs)
    steps = [key for key in runs[labels[0]][0] if key.startswith(STEP_PREFIX)]
    print("| step, median s | " + " | ".join(labels) + " |")
    print("|---|" + "---:|" * len(labels))
    for key in [*steps, "pipeline"]:
        cells = [statistics.median(m.get(key, float("nan")) for m in runs[label]) for label in labels]
        print(f"| {key.removeprefix(STEP_PREFIX)} | " + " | ".join(f"{cell:.2f}" for cell in cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
