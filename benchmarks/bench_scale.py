"""Scale curve: the training pipeline at growing row counts, each step's wall time and peak memory.

For every size the benchmark runs ``mlops run training`` (kfp.local, one
subprocess per task) on the sample generator's 20 features in a fresh
workspace, and samples ``/proc`` while it runs: each process below the CLI is
attributed to the kfp.local task whose executor it descends from (training
ranks and other children count with their task), so a step's peak is the
largest summed PSS (proportional RSS) of its process tree seen at one sample, and its wall time
runs from its executor's start (``/proc/<pid>/stat``) to the last sample that
saw it. A step whose peak lies between two samples is under-read by at most
that spike; the largest ``VmHWM`` (the kernel's own peak RSS) of any one of its
processes is reported beside it as a floor the kernel guarantees.

Beside the pipeline, a bare PyTorch loop trains the same :class:`~training.model.TabularNet`
on the same encoded training tensors (the sample's rows split and encoded the
way the train step does) with the same batch size, epochs, optimiser settings
and torch's default threads, in a fresh process like the train task. The
train step's own ``samples_per_second`` (validation and checkpoints included)
over the bare loop's is the training throughput ratio (goal ≥ 0.9).

The sampler costs about half a core (every process's ``/proc`` files ten times a second), and on two cores
that slows a two-thread training loop by half; so ``--throughput`` measures the training ratio in runs of its
own, unsampled, with the steps as a user's run has them (warm: forked from one process), and shows where the
train step's time went (its ``seconds.*`` metrics) and each step's wall time (the run's own step lines). The
sampled runs use ``--cold-steps``: a step forked from the warm process keeps that process's command line, so
only a step of its own interpreter can be told apart in ``/proc``.

    python benchmarks/bench_scale.py                                  # 50k, 500k, 5M rows, 1 epoch
    python benchmarks/bench_scale.py --throughput                     # the training ratio, unsampled
    python benchmarks/bench_scale.py --rows 5000,20000 --epochs 1     # smoke run, about a minute

Writes ``scale.md`` (table, command, load average before and after) and
``scale.png`` (cost per million rows and peak memory against rows, log x)
under ``--out`` (default ``benchmarks/.out``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAGE = os.sysconf("SC_PAGE_SIZE")
TICKS = os.sysconf("SC_CLK_TCK")
ORCHESTRATOR = "(orchestrator)"
"""The ``mlops run`` process itself: compiles the pipeline, starts each task, keeps the logs."""
TRACKING_SERVER = "(tracking server)"
"""The run's MLflow server and every process it starts (its job runner and queue consumers)."""
TARGET_PEAK_MB = 6000
TARGET_THROUGHPUT_RATIO = 0.9


def pipeline_settings(rows: int, epochs: int) -> dict[str, object]:
    """The settings this benchmark changes, by address (as the pipeline-overhead benchmark)."""
    return {"data.sample.rows": rows, "train.epochs": epochs, "train.patience": epochs, "gate.auc_floor": 0.5}


@dataclass
class StepUsage:
    """What the sampler saw of one task (or of the orchestrator)."""

    started: float = float("inf")
    """Seconds since boot at which its executor process started."""
    last_seen: float = 0.0
    peak_rss: int = 0
    """Largest summed PSS of its process tree at one sample (bytes)."""
    peak_hwm: int = 0
    """Largest VmHWM of any one of its processes (bytes)."""
    processes: set[int] = field(default_factory=set)

    @property
    def seconds(self) -> float:
        return max(self.last_seen - self.started, 0.0)


def _boot_seconds() -> float:
    with open("/proc/uptime") as uptime:
        return float(uptime.read().split()[0])


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, start time in seconds since boot) of ``pid``; None once it has gone."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            text = handle.read()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[1]), int(fields[19]) / TICKS


def _memory(pid: int) -> tuple[int, int]:
    """(PSS, VmHWM) of ``pid`` in bytes; zeros once it has gone.

    PSS (each shared page divided among the processes that map it) is what can be summed over a
    process tree without counting shared libraries once per process; RSS where PSS is unreadable.
    """
    pss = rss = hwm = 0
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1]) * 1024
                elif line.startswith("VmHWM:"):
                    hwm = int(line.split()[1]) * 1024
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    pss = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    return pss or rss, hwm


def _argv(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().decode(errors="replace").split("\0")
    except OSError:
        return []


def task_of(pid: int) -> str | None:
    """The kfp.local task whose executor ``pid`` is (from the executor input's output file path), the
    tracking server if ``pid`` is the run's MLflow server, else None."""
    argv = _argv(pid)
    if "mlflow" in argv and "server" in argv:
        return TRACKING_SERVER
    if "kfp.dsl.executor_main" not in argv or "--executor_input" not in argv:
        return None
    try:
        executor_input = json.loads(argv[argv.index("--executor_input") + 1])
        return Path(executor_input["outputs"]["outputFile"]).parent.name
    except (IndexError, KeyError, ValueError):
        return "(unknown task)"


class TreeSampler(threading.Thread):
    """Samples the process tree below ``root`` every ``interval`` seconds until stopped."""

    def __init__(self, root: int, interval: float) -> None:
        super().__init__(daemon=True)
        self.root = root
        self.interval = interval
        self.steps: dict[str, StepUsage] = {}
        self.peak_total = 0
        """Largest summed PSS of the whole tree (orchestrator, tracking server, tasks) at one sample (bytes)."""
        self._stop_event = threading.Event()
        self._task_names: dict[int, str | None] = {}

    def stop(self) -> None:
        self._stop_event.set()
        self.join()

    def run(self) -> None:
        while not self._stop_event.is_set():
            self.sample()
            self._stop_event.wait(self.interval)

    def _descendants(self) -> Iterator[tuple[int, str, float]]:
        """(pid, task or orchestrator, start) of every process in the tree."""
        parents: dict[int, tuple[int, float]] = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                stat = _stat(int(entry))
                if stat is not None:
                    parents[int(entry)] = stat
        owner: dict[int, str] = {}

        def owner_of(pid: int) -> str | None:
            chain = []
            while pid not in owner:
                if pid == self.root:
                    owner[pid] = ORCHESTRATOR
                    break
                if pid not in parents:
                    break
                chain.append(pid)
                pid = parents[pid][0]
            found = owner.get(pid)
            for link in reversed(chain):  # from the top down: an executor owns what lies below it
                if found is not None:
                    if link not in self._task_names:
                        self._task_names[link] = task_of(link)
                    found = self._task_names[link] or found
                    owner[link] = found
            return found

        for pid, (_, start) in parents.items():
            name = owner_of(pid)
            if name is not None:
                yield pid, name, start

    def sample(self) -> None:
        now = _boot_seconds()
        total = 0
        per_step: dict[str, int] = {}
        for pid, name, start in self._descendants():
            rss, hwm = _memory(pid)
            usage = self.steps.setdefault(name, StepUsage())
            usage.processes.add(pid)
            if (
                name not in (ORCHESTRATOR, TRACKING_SERVER) and self._task_names.get(pid) == name
            ):  # the executor
                usage.started = min(usage.started, start)
            usage.last_seen = now
            usage.peak_hwm = max(usage.peak_hwm, hwm)
            per_step[name] = per_step.get(name, 0) + rss
            total += rss
        for name, rss in per_step.items():
            self.steps[name].peak_rss = max(self.steps[name].peak_rss, rss)
        self.peak_total = max(self.peak_total, total)


@dataclass(frozen=True)
class PipelineRun:
    rows: int
    seconds: float
    steps: dict[str, StepUsage]
    peak_total: int
    train_samples_per_second: float | None
    returncode: int
    train_seconds: dict[str, float] = field(default_factory=dict)
    """Where the train step's time went, as it recorded it (``seconds.*`` metrics of its MLflow run)."""


def run_pipeline(rows: int, epochs: int, interval: float | None, log_dir: Path) -> PipelineRun:
    """One ``mlops run training`` in a fresh workspace, its console output kept in ``log_dir``: sampled every
    ``interval`` seconds with cold steps, or with ``interval`` None unsampled as a user runs it (warm steps)."""
    with tempfile.TemporaryDirectory(prefix=f"bench-scale-{rows}-") as scratch:
        workspace = Path(scratch) / "workspace"
        command = [sys.executable, "-m", "cli.main", "--workspace", str(workspace), "run", "training"]
        command += ["--cold-steps"] if interval is not None else []
        for address, value in pipeline_settings(rows, epochs).items():
            command += ["--set", f"{address}={value}"]
        log_path = log_dir / f"scale-{rows}{'' if interval is not None else '-unsampled'}.log"
        start = time.perf_counter()
        with log_path.open("w") as log:
            process = subprocess.Popen(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
            sampler = TreeSampler(process.pid, interval) if interval is not None else None
            if sampler is not None:
                sampler.start()
            returncode = process.wait()
            if sampler is not None:
                sampler.stop()
        seconds = time.perf_counter() - start
        if sampler is None:
            steps = {
                name: StepUsage(started=0.0, last_seen=wall) for name, wall in step_lines(log_path).items()
            }
            return PipelineRun(
                rows, seconds, steps, 0, _train_speed(workspace), returncode, _train_seconds(workspace)
            )
        steps = dict(sampler.steps)
        for name in (ORCHESTRATOR, TRACKING_SERVER):  # their wall time is the run's
            if name in steps:
                steps[name].started = steps[name].last_seen - seconds
        return PipelineRun(
            rows,
            seconds,
            steps,
            sampler.peak_total,
            _train_speed(workspace),
            returncode,
            _train_seconds(workspace),
        )


def step_lines(log_path: Path) -> dict[str, float]:
    """Each step's wall time as the run printed it (``  ok     train-model     3m04s  …``)."""
    import re

    found = {}
    for line in log_path.read_text().splitlines():
        match = re.match(r"\s+ok\s+(\S+)\s+(?:(\d+)m)?([\d.]+)s\b", line)
        if match:
            found[match.group(1)] = 60 * float(match.group(2) or 0) + float(match.group(3))
    return found


def _train_seconds(workspace: Path) -> dict[str, float]:
    """The train step's ``seconds.*`` metrics, read from the workspace's MLflow store (SQLite)."""
    import sqlite3

    from components.train.training_task import SECONDS_PREFIX

    database = workspace / "mlflow.db"
    if not database.is_file():
        return {}
    with sqlite3.connect(database) as connection:
        rows = connection.execute(
            "SELECT key, value FROM latest_metrics WHERE key LIKE ?", (f"{SECONDS_PREFIX}%",)
        ).fetchall()
    return {key.removeprefix(SECONDS_PREFIX): float(value) for key, value in rows}


def _train_speed(workspace: Path) -> float | None:
    """The train step's reported ``samples_per_second`` (validation and checkpoints included)."""
    for output in workspace.glob("pipeline-runs/training-*/train-model/executor_output.json"):
        artifacts = json.loads(output.read_text()).get("artifacts", {})
        for artifact in artifacts.get("metrics", {}).get("artifacts", []):
            speed = artifact.get("metadata", {}).get("samples_per_second")
            if speed is not None:
                return float(speed)
    return None


def bare_loop(rows: int, epochs: int) -> dict[str, float]:
    """Train the pipeline's model on the same encoded training tensors with a bare loop; samples/s."""
    import torch

    from benchmarks.bench_training_throughput import bare_loop as throughput_bare_loop
    from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
    from mlops.settings import section_of
    from pipelines.training.pipeline import FORM
    from training.config import TrainConfig
    from training.data_splits import encode_splits, split_frame

    configs = {section_of(type(c)): c for c in FORM.configs(FORM.arguments(pipeline_settings(rows, epochs)))}
    config = configs["train"]
    assert isinstance(config, TrainConfig)
    frame = generate(SampleDataConfig(rows=rows))
    schema = SAMPLE_SCHEMA.model_copy(update={"protected_attributes": ()})
    data = encode_splits(split_frame(frame, schema, config), schema)
    # the same loop as benchmarks/bench_training_throughput.py's baseline (fused AdamW, as the train step)
    throughput = throughput_bare_loop(data, config, fused=True)
    x = data.x_train
    return {
        "samples_per_second": throughput.wall,
        "train_rows": float(len(x)),
        "batch_size": float(config.batch_size),
        "threads": float(torch.get_num_threads()),
    }


def run_bare_loop(rows: int, epochs: int) -> dict[str, float]:
    """:func:`bare_loop` in a fresh process, as the train task runs (its own threads and memory)."""
    result = subprocess.run(
        [
            sys.executable,
            str(Path(__file__).resolve()),
            "--bare-loop",
            "--rows",
            str(rows),
            "--epochs",
            str(epochs),
        ],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(result.stdout.strip().splitlines()[-1]))


def _mb(size: int) -> float:
    return size / 1e6


def table(runs: list[PipelineRun], bare: dict[int, dict[str, float]]) -> list[str]:
    lines = [
        "| rows | step | wall s | s per M rows | peak MB (tree, sampled) | max VmHWM MB (one process) |",
        "|---:|---|---:|---:|---:|---:|",
    ]
    for run in runs:
        millions = run.rows / 1e6
        ordered = sorted(
            run.steps.items(), key=lambda item: (item[0] in (ORCHESTRATOR, TRACKING_SERVER), item[1].started)
        )
        for name, usage in ordered:
            peaks = (
                f"{_mb(usage.peak_rss):,.0f} | {_mb(usage.peak_hwm):,.0f}" if usage.peak_rss else "n/a | n/a"
            )
            lines.append(
                f"| {run.rows:,} | {name} | {usage.seconds:.1f} | {usage.seconds / millions:.1f} | {peaks} |"
            )
        lines.append(
            f"| {run.rows:,} | **whole run** | {run.seconds:.1f} | {run.seconds / millions:.1f} "
            f"| {_mb(run.peak_total):,.0f} | |"
        )
    lines += [
        "",
        "| rows | train step samples/s | bare loop samples/s | ratio (goal ≥ 0.9) | largest step peak MB "
        "| whole-run peak MB (goal ≤ 6000 at 5M) | exit |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for run in runs:
        base = bare.get(run.rows, {}).get("samples_per_second")
        ratio = (
            f"{run.train_samples_per_second / base:.2f}" if base and run.train_samples_per_second else "n/a"
        )
        speed = f"{run.train_samples_per_second:,.0f}" if run.train_samples_per_second else "n/a"
        step_peak = max(
            (u.peak_rss for name, u in run.steps.items() if name not in (ORCHESTRATOR, TRACKING_SERVER)),
            default=0,
        )
        bare_speed = f"{base:,.0f}" if base else "n/a"
        lines.append(
            f"| {run.rows:,} | {speed} | {bare_speed} | {ratio} | {_mb(step_peak):,.0f} "
            f"| {_mb(run.peak_total):,.0f} | {run.returncode} |"
        )
    from training.trainer import PARTS  # torch: not in the sampling process while the pipelines run

    parts = [
        part for part in ("read", *PARTS, "test_split") if any(part in run.train_seconds for run in runs)
    ]
    if parts:
        lines += ["", "| rows | train step s: " + " | ".join(parts) + " |", "|---:|" + "---:|" * len(parts)]
        for run in runs:
            cells = [f"{run.train_seconds[p]:.2f}" if p in run.train_seconds else "n/a" for p in parts]
            lines.append(f"| {run.rows:,} | " + " | ".join(cells) + " |")
    return lines


def plot(runs: list[PipelineRun], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = sorted({name for run in runs for name in run.steps})
    figure, (cost, memory) = plt.subplots(1, 2, figsize=(13, 5))
    colours = plt.get_cmap("tab20")
    for number, name in enumerate(names):
        points = [(run.rows, run.steps[name]) for run in runs if name in run.steps]
        rows = [r for r, _ in points]
        style = {"marker": "o", "label": name, "color": colours(number % 20)}
        if name not in (ORCHESTRATOR, TRACKING_SERVER):  # they last the whole run: not a step's cost
            cost.plot(rows, [u.seconds / (r / 1e6) for r, u in points], **style)
        memory.plot(rows, [_mb(u.peak_rss) for _, u in points], **style)
    memory.plot(
        [run.rows for run in runs],
        [_mb(run.peak_total) for run in runs],
        "k--",
        marker="s",
        label="whole run",
    )
    memory.axhline(TARGET_PEAK_MB, color="red", linestyle=":", label="6 GB goal")
    for axis, title, unit in ((cost, "cost per million rows", "s per M rows"), (memory, "peak memory", "MB")):
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("rows")
        axis.set_ylabel(unit)
        axis.set_title(title)
        axis.grid(True, which="both", alpha=0.3)
    memory.legend(fontsize=7, loc="upper left")
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", default="50000,500000,5000000", help="comma-separated row counts")
    parser.add_argument("--epochs", type=int, default=1, help="training epochs at every size")
    parser.add_argument("--interval", type=float, default=0.1, help="seconds between /proc samples")
    parser.add_argument(
        "--out", type=Path, default=REPO / "benchmarks" / ".out", help="where scale.md/.png go"
    )
    parser.add_argument(
        "--throughput",
        action="store_true",
        help="unsampled runs (warm steps) for the training ratio and the train step's parts, no memory figures",
    )
    parser.add_argument("--no-bare-loop", action="store_true", help="skip the bare PyTorch baseline")
    parser.add_argument("--bare-loop", action="store_true", help=argparse.SUPPRESS)  # the child process
    args = parser.parse_args(argv)
    try:
        sizes = [int(size.replace("_", "")) for size in args.rows.split(",")]
    except ValueError:
        parser.error(f"--rows {args.rows!r}: give comma-separated whole numbers, e.g. 50000,500000")
    if args.bare_loop:
        print(json.dumps(bare_loop(sizes[0], args.epochs)))
        return
    args.out.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()
    runs, bare = [], {}
    for rows in sizes:
        runs.append(run_pipeline(rows, args.epochs, None if args.throughput else args.interval, args.out))
        print(f"{rows:,} rows: {runs[-1].seconds:.1f} s, peak {_mb(runs[-1].peak_total):,.0f} MB", flush=True)
        if not args.no_bare_loop:
            bare[rows] = run_bare_loop(rows, args.epochs)
    load_after = os.getloadavg()
    command = "python benchmarks/bench_scale.py " + " ".join(argv if argv is not None else sys.argv[1:])
    report = [
        "## Scale curve: training pipeline, sample generator (20 features)",
        "",
        f"Command: `{command}` ({args.epochs} epoch(s); per-step logs in scale-<rows>.log)",
        f"Load average before: {' '.join(f'{v:.2f}' for v in load_before)}; "
        f"after: {' '.join(f'{v:.2f}' for v in load_after)} (a figure taken at load > 1.5 is not a result)",
        f"CPUs: {os.cpu_count()}; "
        + (
            "unsampled runs, warm steps (step wall times: the run's step lines)"
            if args.throughput
            else f"/proc sampled every {args.interval} s, cold steps"
        ),
        "",
        *table(runs, bare),
        "",
        "Bare loop: "
        + "; ".join(
            f"{rows:,} rows: {int(b['train_rows']):,} training rows, batch {int(b['batch_size'])}, "
            f"{int(b['threads'])} threads"
            for rows, b in bare.items()
        ),
    ]
    name = "scale-throughput" if args.throughput else "scale"
    (args.out / f"{name}.md").write_text("\n".join(report) + "\n")
    if not args.throughput:
        plot(runs, args.out / "scale.png")
    print("\n".join(report))
    print(f"\nwrote {args.out / name}.md" + ("" if args.throughput else f" and {args.out / 'scale.png'}"))


if __name__ == "__main__":
    main()
