"""The fan-in step: pick the study's best trial and report the search on the MLflow parent run.

The best trial is taken over the whole study, including trials of earlier
runs with the same study name: resuming is meant to refine what was found.
"""

from __future__ import annotations

import tempfile
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from components.tune.pareto import FrontPoint, choose, front
from components.tune.space import apply
from components.tune.study import TuningPlan, open_storage
from mlops.tracking.store import TrackingStore
from training.config import TrainConfig

if TYPE_CHECKING:
    import optuna


class NoCompletedTrial(RuntimeError):
    """Every trial of the study failed or was pruned: there is nothing to retrain."""


@dataclass(frozen=True)
class BestTrial:
    number: int
    """Optuna trial number (counts continue across resumed runs)."""
    value: float
    """Best validation ROC AUC of that trial."""
    params: dict[str, Any]
    """The tuned values, in training terms (``hidden_units`` as a list)."""
    config: TrainConfig
    """The base training config with ``params`` applied: what the train step should run."""
    mlflow_run_id: str
    """The trial's child run."""
    states: dict[str, int]
    """Trials of the study per final state (``complete``, ``pruned``, ``fail``, ``running``…)."""


def select_best(plan: TuningPlan, tracking: TrackingStore) -> BestTrial:
    """Load the study, pick the best completed trial, log it with plots to the parent run."""
    import mlflow
    import optuna

    study = optuna.load_study(study_name=plan.settings.study_name, storage=open_storage(plan.storage))
    trials = study.get_trials(deepcopy=False)
    states = dict(Counter(t.state.name.lower() for t in trials))
    if not states.get("complete"):
        raise NoCompletedTrial(
            f"study {plan.settings.study_name!r} has no completed trial ({states or 'no trials'}); see the "
            f"failed/pruned child runs of MLflow run {plan.parent_run_id}, then widen the search space, "
            "relax the pruner or raise max_trials"
        )
    pareto: list[FrontPoint] = []
    if plan.settings.multi_objective:
        pareto = front(study)
        chosen = choose(pareto, plan.settings.max_fairness_gap)
        best_trial = next(t for t in trials if t.number == chosen.number)
        value = chosen.val_auc
    else:
        best_trial = study.best_trial
        value = float(best_trial.value or 0.0)
    params = plan.space.decode({k: v for k, v in best_trial.params.items() if k in plan.space.parameters})
    best = BestTrial(
        number=best_trial.number,
        value=value,
        params=params,
        config=apply(plan.base, params),
        mlflow_run_id=str(best_trial.user_attrs.get("mlflow_run_id", "")),
        states=states,
    )
    with tracking.resume_run(plan.parent_run_id):
        mlflow.log_params({f"best.{k}": _flat(v) for k, v in params.items()})
        mlflow.log_metrics(
            {
                "best_val_auc": best.value,
                "best_trial": float(best.number),
                "trials_total": float(len(trials)),
                **{f"trials_{state}": float(count) for state, count in states.items()},
            }
        )
        mlflow.set_tags({"optuna.best_trial": str(best.number), "optuna.best_run_id": best.mlflow_run_id})
        with tempfile.TemporaryDirectory(prefix="mlops-tune-plots-") as scratch:
            if pareto:
                write_front(study, pareto, best.number, plan.settings.max_fairness_gap, Path(scratch))
                mlflow.log_metrics(
                    {"best_fairness_gap": chosen.fairness_gap, "pareto_trials": float(len(pareto))}
                )
            else:
                write_plots(study, Path(scratch))
            mlflow.log_artifacts(scratch, "tuning")
    return best


def _flat(value: Any) -> Any:
    return ",".join(map(str, value)) if isinstance(value, list | tuple) else value


def write_plots(study: optuna.Study, folder: Path) -> list[Path]:
    """Optimisation history and parameter importance as PNGs.

    Importance needs at least two completed trials with differing values; when
    it cannot be computed the image says why instead of failing the step.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from optuna.visualization import matplotlib as optuna_plots

    paths = []
    figure: Any  # a Figure; matplotlib types Axes.figure as Figure | SubFigure
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the matplotlib backend is flagged experimental
        for name, draw in (
            ("optimization_history.png", optuna_plots.plot_optimization_history),
            ("param_importances.png", optuna_plots.plot_param_importances),
        ):
            try:
                axes = draw(study)
                figure = axes.figure
            except (ValueError, RuntimeError, ZeroDivisionError) as exc:
                figure, axes = plt.subplots(figsize=(6, 2))
                axes.axis("off")
                axes.text(0.5, 0.5, f"{name[:-4]} unavailable:\n{exc}", ha="center", va="center", wrap=True)
            path = folder / name
            figure.savefig(path, dpi=100, bbox_inches="tight")
            plt.close(figure)
            paths.append(path)
    return paths


def write_front(
    study: optuna.Study, pareto: list[FrontPoint], chosen: int, limit: float, folder: Path
) -> list[Path]:
    """``pareto_front.json`` (every front trial, the rule and the choice) and ``pareto_front.png``."""
    import json

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from optuna.visualization import matplotlib as optuna_plots

    document = {
        "objectives": ["val_auc (maximise)", "fairness_gap (minimise)"],
        "rule": f"highest val_auc with fairness_gap <= {limit} (tune.max_fairness_gap); ties: lower gap, lower trial",
        "chosen_trial": chosen,
        "front": [p.row for p in pareto],
    }
    json_path = folder / "pareto_front.json"
    json_path.write_text(json.dumps(document, indent=2, default=str))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the matplotlib backend is flagged experimental
        axes = optuna_plots.plot_pareto_front(study, target_names=["val_auc", "fairness_gap"])
    axes.axhline(limit, color="#b00020", linestyle="--", linewidth=1, label=f"max_fairness_gap {limit}")
    picked = next(p for p in pareto if p.number == chosen)
    axes.scatter(
        [picked.val_auc], [picked.fairness_gap], s=160, facecolors="none", edgecolors="black", label="chosen"
    )
    axes.legend(loc="best", fontsize="small")
    png_path = folder / "pareto_front.png"
    figure: Any = axes.figure
    figure.savefig(png_path, dpi=100, bbox_inches="tight")
    plt.close(figure)
    return [json_path, png_path]
