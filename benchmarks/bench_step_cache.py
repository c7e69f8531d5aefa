"""What ``mlops run training --cache`` saves: a cold run, a re-run with unchanged inputs, and a run with one
setting changed, in a fresh workspace, each as a user runs it (``python -m cli.main``, a new process).

For each run: its wall time (process start included), and each step's status (``ran`` / ``cached``) and
seconds as the run recorded them (``<run>/mlops-run.json``). The cold run is the baseline of the same
benchmark. Everything, with the command and the load average before and after, goes to
``benchmarks/.out/step_cache.md``.

    python benchmarks/bench_step_cache.py --rows 5000 --epochs 5
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / ".out" / "step_cache.md"


def cache_folders(workspace: Path) -> set[str]:
    """The step-cache folders in the workspace: one per digest of the platform code and named files."""
    root = workspace / "pipeline-runs" / ".kfp_cache"
    return {p.name for p in root.iterdir() if p.is_dir()} if root.is_dir() else set()


def run_training(workspace: Path, settings: dict[str, object]) -> tuple[float, list[dict[str, object]], int]:
    """One ``mlops run training --cache`` in a new process: its wall seconds, recorded steps and exit code."""
    from cli.console.record import all_runs

    command = [sys.executable, "-m", "cli.main", "--workspace", str(workspace), "run", "training", "--cache"]
    for address, value in settings.items():
        command += ["--set", f"{address}={value}"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.stderr.write(done.stdout[-4000:] + done.stderr[-4000:])
    runs = all_runs(workspace / "pipeline-runs")
    return seconds, (runs[0].steps if runs else []), done.returncode


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=5000, help="sample rows (data.sample.rows)")
    parser.add_argument("--epochs", type=int, default=5, help="training epochs (train.epochs)")
    args = parser.parse_args()
    base: dict[str, object] = {"data.sample.rows": args.rows, "train.epochs": args.epochs}
    cases = [
        ("cold (baseline: every step runs, the cache is written)", base),
        ("re-run, inputs unchanged", base),
        ("one setting changed: train.learning_rate=0.002", {**base, "train.learning_rate": 0.002}),
    ]
    load_before = os.getloadavg()
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-step-cache-") as folder:
        for name, settings in cases:
            seconds, steps, code = run_training(Path(folder) / "ws", settings)
            results.append((name, seconds, steps, code))
            print(f"{name}: {seconds:.1f} s, exit {code}", flush=True)
        folders = cache_folders(Path(folder) / "ws")
    load_after = os.getloadavg()

    lines = [
        "# `mlops run training --cache`: cold run, unchanged re-run, one setting changed",
        "",
        f"Command: `python benchmarks/bench_step_cache.py --rows {args.rows} --epochs {args.epochs}`",
        f"Load average before: {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}; "
        f"after: {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}",
        "",
        "| run | wall s | vs cold | steps run | steps cached | exit |",
        "|---|---:|---:|---|---|---:|",
    ]
    cold = results[0][1]
    for name, seconds, steps, code in results:
        ran = [str(s["name"]) for s in steps if s["status"] == "finished"]
        cached = [str(s["name"]) for s in steps if s["status"] == "cached"]
        lines.append(
            f"| {name} | {seconds:.1f} | {seconds / cold:.2f}× | {', '.join(ran) or '-'} | "
            f"{', '.join(cached) or '-'} | {code} |"
        )
    if len(folders) > 1:  # the code or a named file was edited while the benchmark ran: nothing could hit
        lines += [
            "",
            f"**VOID**: the runs used {len(folders)} cache folders ({', '.join(sorted(folders))}): the platform "
            "code changed while the benchmark ran, so every run started from an empty cache. Run it again with "
            "nothing editing the tree.",
        ]
    lines += ["", "Each step's seconds as the run recorded them (0 for a cached step):", ""]
    names = [str(s["name"]) for s in results[0][2]]
    lines += ["| step | " + " | ".join(f"run {i + 1}" for i in range(len(results))) + " |"]
    lines += ["|---|" + "---:|" * len(results)]
    for step in names:
        cells = []
        for _, _, steps, _ in results:
            found = next((s for s in steps if s["name"] == step), None)
            cells.append("-" if found is None else f"{float(str(found['seconds'])):.1f} ({found['status']})")
        lines.append(f"| {step} | " + " | ".join(cells) + " |")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("\n".join(lines) + "\n")
    print(f"wrote {OUT}")
    return 0 if all(code == 0 for *_, code in results) and len(folders) == 1 else 1


if __name__ == "__main__":
    raise SystemExit(main())
