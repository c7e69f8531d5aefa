"""What ``mlops run tuning`` prints at the end: the best trial and where the study lives."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cli.console.display import duration
from cli.local_run import LocalRun
from cli.summaries.run_outline import run_lines
from components.tune.study_workers import TASK_NAME
from mlops.vocabulary import TASK_TAG
from mlops.workspace import Workspace


def print_summary(workspace: Workspace, settings: Mapping[str, Any], result: LocalRun) -> dict[str, str]:
    """The newest tuning parent run: best trial, its parameters and the trial counts (``settings``: by address)."""
    from mlops.tracking.store import TrackingStore

    experiment = settings["tracking.experiment"]
    store = TrackingStore.from_uri(settings["tracking.tracking_uri"])
    found = store.experiment_by_name(experiment)
    runs = (
        store.find_runs(
            [found.experiment_id],
            f"tags.`{TASK_TAG}` = '{TASK_NAME}'",
            order_by=["attributes.start_time DESC"],
            max_results=1,
        )
        if found
        else []
    )
    if not runs:
        print(f"Tuning finished, but no tuning run was found in MLflow experiment {experiment!r}.")
        return {}
    run = runs[0]
    metrics, params = run.data.metrics, run.data.params
    counts = ", ".join(
        f"{int(metrics[k])} {k.removeprefix('trials_')}" for k in sorted(metrics) if k.startswith("trials_")
    )
    lines = [
        "",
        f"Tuning finished in {duration(result.seconds)}.",
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
        f"  {'study storage':<17} {params.get('tune.resolved_storage', '?')}",
    ]
    lines += run_lines(result)
    lines.append(f"  {'browse runs':<17} mlops ui · mlops runs")
    print("\n".join(lines))
    return {"best validation AUC": f"{metrics.get('best_val_auc', float('nan')):.4f}", "trials": counts}
