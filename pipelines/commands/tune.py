"""``mlops tune``: run hyperparameter tuning alone on this machine (kfp.local, study next to MLflow)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from mlops.workspace import Workspace
from pipelines.commands.options import add_data_and_overrides, resolve_data

# CLI flag -> tuning pipeline parameter; a flag left unset keeps the pipeline default (or a --set value).
FLAGS = {
    "study": "study_name",
    "trials": "tune_trials",
    "workers": "tune_workers",
    "max_minutes": "tune_max_minutes",
    "storage": "study_storage",
    "pruner": "pruner",
}


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "tune", help="tune hyperparameters: parallel Optuna trials sharing one study (kfp.local)"
    )
    parser.add_argument("--study", help="study name; an existing study is resumed (default credit-default)")
    parser.add_argument("--trials", type=int, help="new trials to run (default 8)")
    parser.add_argument("--workers", type=int, help="parallel workers sharing the study (default 2)")
    parser.add_argument("--max-minutes", type=float, help="wall-time budget in minutes (default 60)")
    parser.add_argument("--pruner", choices=["median", "hyperband", "none"], help="default median")
    parser.add_argument(
        "--search-space", default="", help="YAML/JSON search-space file (default: the built-in one)"
    )
    parser.add_argument(
        "--storage", help="Optuna storage URL (default: optuna.db in the workspace, next to mlflow.db)"
    )
    add_data_and_overrides(parser, "override a tuning pipeline parameter (repeatable), e.g. epochs=10")
    parser.set_defaults(handler=tune_command)


def tune_command(args: argparse.Namespace, workspace: Workspace) -> int:
    from pipelines.local_run import PipelineFailed, run_locally
    from pipelines.parameters import merged_arguments, parse_overrides
    from pipelines.summary import print_failure
    from pipelines.tuning import tuning_pipeline

    overrides = parse_overrides(tuning_pipeline, args.overrides)
    base: dict[str, Any] = {
        "data_uri": resolve_data(args.data),
        "tracking_uri": workspace.tracking_uri,
        "artifact_root": workspace.artifact_root,
    }
    if args.search_space:
        space = Path(args.search_space).expanduser().resolve()
        if not space.is_file():
            raise ValueError(f"--search-space {args.search_space}: no such file ({space})")
        base["search_space_file"] = str(space)
    base.update(
        {param: getattr(args, flag) for flag, param in FLAGS.items() if getattr(args, flag) is not None}
    )
    arguments = merged_arguments(tuning_pipeline, base, overrides)
    try:
        result = run_locally(tuning_pipeline, arguments, workspace)
    except PipelineFailed as failure:
        print_failure(failure, workspace)
        return 1
    print_tuning_summary(workspace, arguments.get("experiment", "tuning"), result.run_dir)
    return 0


def print_tuning_summary(workspace: Workspace, experiment: str, run_dir: Path | None) -> None:
    """The newest tuning parent run: best trial, its parameters and the trial counts."""
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=workspace.tracking_uri)
    found = client.get_experiment_by_name(experiment)
    runs = (
        client.search_runs(
            [found.experiment_id],
            "tags.`mlops.task` = 'tune'",
            order_by=["attributes.start_time DESC"],
            max_results=1,
        )
        if found
        else []
    )
    if not runs:
        print(f"Tuning finished, but no tuning run was found in MLflow experiment {experiment!r}.")
        return
    run = runs[0]
    metrics, params = run.data.metrics, run.data.params
    counts = ", ".join(
        f"{int(metrics[k])} {k.removeprefix('trials_')}" for k in sorted(metrics) if k.startswith("trials_")
    )
    lines = [
        "",
        "Tuning finished.",
        f"  {'study':<17} {run.data.tags.get('optuna.study_name', '?')} ({counts})",
        f"  {'best trial':<17} #{run.data.tags.get('optuna.best_trial', '?')}: "
        f"validation AUC {metrics.get('best_val_auc', float('nan')):.4f}",
    ]
    lines += [
        f"  {name.removeprefix('best.'):<17} {value}"
        for name, value in sorted(params.items())
        if name.startswith("best.")
    ]
    lines += [
        f"  {'tuning run':<17} {run.info.run_id} (experiment {experiment}; trials are its child runs)",
        f"  {'study storage':<17} {params.get('tune.storage', '?')}",
    ]
    if run_dir is not None:
        lines.append(f"  {'pipeline run':<17} {run_dir}")
    lines.append(f"  {'browse runs':<17} mlops ui")
    print("\n".join(lines))
