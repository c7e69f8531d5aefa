"""Wall time to reach a target validation AUC: median pruning versus no pruning, same trial budget.

Both searches run in this process, one after the other, through the tuning
component's own code path (set-up, worker, MLflow child runs on a throwaway
SQLite store), on the same data, search space, base config and sampler seed.
The TPE sampler's random start-up trials propose the same points in both
searches; after that the proposals diverge because the pruned search learns
from fewer complete trials. One worker runs the trials sequentially so the
clock measures the search, not scheduling.

Time to target is when the first COMPLETE trial at or above the target
finished, counted from the study's set-up. Without ``--target`` the target is
the lower of the two searches' best AUCs, so both reach it. A short untimed
search runs first, so neither timed search pays the process's one-time costs
(imports, MLflow schema creation, first-call kernel set-up).

    python benchmarks/bench_tuning_pruning.py --rows 5000 --trials 16 --epochs 10
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import optuna
import pandas as pd

from components.tune.study import TuneSettings
from components.tune.study_workers import prepare_study, run_worker
from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
from mlops.tracking.store import TrackingStore
from training.config import TrainConfig


@dataclass(frozen=True)
class Search:
    pruner: str
    wall_seconds: float
    """Whole search, set-up included."""
    cpu_seconds: float
    """Process CPU time of the search, all threads: barely moved by other work on a shared machine."""
    finished: list[tuple[float, float]]
    """(seconds since set-up, value) of each COMPLETE trial, in completion order."""
    pruned: int
    failed: int
    epochs_trained: int
    """Sum of epochs over all trials (pruned trials count the epochs they ran)."""
    rows: list[str]
    """One markdown row per trial: what it tried, how far it ran, how long it took."""

    @property
    def best(self) -> float:
        return max(value for _, value in self.finished)

    def time_to(self, target: float) -> float | None:
        return next((t for t, value in self.finished if value >= target), None)


def search(
    pruner: str,
    frame: pd.DataFrame,
    base: TrainConfig,
    trials: int,
    seed: int,
    root: Path,
    space_file: str = "",
) -> Search:
    folder = root / pruner
    folder.mkdir()
    tracking = TrackingStore(tracking_uri=f"sqlite:///{folder}/mlflow.db", experiment="bench")
    settings = TuneSettings(
        study_name=f"bench-{pruner}",
        trials=trials,
        max_minutes=600,
        workers=1,
        pruner=pruner,  # type: ignore[arg-type]
        sampler_seed=seed,
        pruner_startup_trials=3,
        pruner_warmup_epochs=1,
    )
    start, cpu_start = time.perf_counter(), time.process_time()
    plan = prepare_study(settings, base, f"sqlite:///{folder}/optuna.db", tracking, space_file)
    run_worker(plan, 0, frame, SAMPLE_SCHEMA, tracking)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    study = optuna.load_study(study_name=settings.study_name, storage=plan.storage)
    origin = plan.deadline - settings.max_minutes * 60
    complete = sorted(
        (t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE),
        key=lambda t: t.datetime_complete,  # type: ignore[arg-type, return-value]
    )
    finished = [(t.datetime_complete.timestamp() - origin, float(t.value)) for t in complete]  # type: ignore[union-attr, arg-type]
    states = [t.state for t in study.trials]
    rows = [
        f"| {pruner} | {t.number} | {t.state.name.lower()} | {len(t.intermediate_values)} | "
        f"{(t.datetime_complete - t.datetime_start).total_seconds():.1f} | "  # type: ignore[operator]
        f"{max(t.intermediate_values.values(), default=float('nan')):.4f} | "
        + ", ".join(
            f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in sorted(t.params.items())
        )
        + " |"
        for t in study.trials
    ]
    return Search(
        pruner=pruner,
        wall_seconds=wall,
        cpu_seconds=cpu,
        finished=finished,
        pruned=states.count(optuna.trial.TrialState.PRUNED),
        failed=states.count(optuna.trial.TrialState.FAIL),
        epochs_trained=sum(len(t.intermediate_values) for t in study.trials),
        rows=rows,
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Tuning with vs without median pruning: time to target AUC.")
    parser.add_argument("--rows", type=int, default=5000, help="rows of sample data")
    parser.add_argument("--trials", type=int, default=16, help="trial budget of each search")
    parser.add_argument("--epochs", type=int, default=10, help="maximum epochs per trial")
    parser.add_argument("--seed", type=int, default=0, help="sampler seed, shared by both searches")
    parser.add_argument(
        "--target", type=float, default=None, help="validation AUC to reach (default: see doc)"
    )
    parser.add_argument("--space", default="", help="search-space file (default: the component's default)")
    args = parser.parse_args(argv)

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    frame = generate(SampleDataConfig(rows=args.rows, seed=0))
    base = TrainConfig(epochs=args.epochs, patience=3, precision="fp32", device="cpu")
    with tempfile.TemporaryDirectory(prefix="bench-tune-") as scratch:
        warm = base.model_copy(update={"epochs": 1})
        search("hyperband", frame.head(1000), warm, 2, args.seed, Path(scratch))  # untimed warm-up
        runs = [
            search(p, frame, base, args.trials, args.seed, Path(scratch), args.space)
            for p in ("none", "median")
        ]
    target = args.target if args.target is not None else min(r.best for r in runs)

    print(
        f"\n{args.rows} rows, {args.trials} trials per search, up to {args.epochs} epochs, target AUC {target:.4f}\n"
    )
    print(
        "| pruner | wall time (s) | CPU time (s) | time to target (s) | best val AUC | complete | pruned | failed "
        "| epochs trained |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for run in runs:
        reached = run.time_to(target)
        shown = f"{reached:.1f}" if reached is not None else "not reached"
        print(
            f"| {run.pruner} | {run.wall_seconds:.1f} | {run.cpu_seconds:.1f} | {shown} | {run.best:.4f} | {len(run.finished)} | "
            f"{run.pruned} | {run.failed} | {run.epochs_trained} |"
        )
    print(
        "\n| pruner | trial | state | epochs | seconds | best epoch AUC | params |\n|---|---|---|---|---|---|---|"
    )
    print("\n".join(row for run in runs for row in run.rows))
    plain, pruned = runs
    print(
        f"\nmedian pruning: {pruned.wall_seconds / plain.wall_seconds:.2f}x the wall time and "
        f"{pruned.cpu_seconds / plain.cpu_seconds:.2f}x the CPU time of no pruning, "
        f"{pruned.epochs_trained / plain.epochs_trained:.2f}x the epochs, same {args.trials}-trial budget"
    )


if __name__ == "__main__":
    main()
