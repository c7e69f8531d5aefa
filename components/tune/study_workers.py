"""Set up a tuning run and run one worker's trials; the training core does the training.

The set-up step checks everything that can be wrong before any trial starts
(search space, storage, study direction), opens the MLflow parent run and
writes the :class:`~components.tune.study.TuningPlan`. Each worker then asks
the shared study for trials and trains them with :func:`training.trainer.train`;
pruning hooks into the per-epoch metrics the core already reports to its
:class:`~training.metrics_logger.MetricsLogger`, so the training loop needs no
Optuna-specific code.
"""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from components.tune.space import SearchSpace, load_space
from components.tune.study import (
    StudyStorageError,
    TuneSettings,
    TuningPlan,
    open_storage,
    open_study,
    redact,
)
from mlops.data.dataset import DatasetSchema
from mlops.progress import Progress, emit
from mlops.settings import tracker_params
from mlops.tracking.store import TrackingStore
from training.config import TrainConfig

if TYPE_CHECKING:
    import optuna
    import pandas as pd

    from training.metrics_logger import MetricsLogger

TASK_NAME = "tune"
TRIAL_TASK_NAME = "tune_trial"
STATE_TAG = "optuna.state"
MLFLOW_STATUS = {"complete": "FINISHED", "pruned": "KILLED", "failed": "FAILED"}
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WorkerSummary:
    """What one worker did; the fan-in step sums these."""

    complete: int
    pruned: int
    failed: int

    @property
    def trials(self) -> int:
        return self.complete + self.pruned + self.failed


def prepare_study(
    settings: TuneSettings,
    base: TrainConfig,
    storage_url: str,
    tracking: TrackingStore,
    space_file: str = "",
    space_overrides: Mapping[str, Any] | None = None,
) -> TuningPlan:
    """Validate the inputs, create or resume the study and open the MLflow parent run.

    Nothing is written to MLflow until the space and the storage have passed,
    so bad input leaves no half-started tuning run behind.
    """
    import mlflow
    import optuna

    if settings.trials < 1:
        raise ValueError(f"tune.trials is {settings.trials}: nothing to tune; set tune.trials >= 1")
    space: SearchSpace = load_space(space_file, space_overrides)
    space.check_against(base)
    storage = open_storage(storage_url)
    directions: list[Literal["minimize", "maximize"]] = ["maximize"]
    if settings.multi_objective:
        directions.append("minimize")  # fairness_gap
    study = optuna.create_study(
        study_name=settings.study_name, storage=storage, directions=directions, load_if_exists=True
    )
    wanted = [
        optuna.study.StudyDirection.MAXIMIZE,
        *([optuna.study.StudyDirection.MINIMIZE] if settings.multi_objective else []),
    ]
    if study.directions != wanted:
        raise StudyStorageError(
            f"study {settings.study_name!r} in {redact(storage_url)} optimises "
            f"{[d.name.lower() for d in study.directions]}, but tune.objectives {list(settings.objectives)} asks for "
            f"{directions}: pick another study_name"
        )
    trials_before = len(study.get_trials(deepcopy=False))
    with tracking.task_run(TASK_NAME) as run:
        mlflow.log_params(
            {
                # The settings by address (tune.trials, train.learning_rate: the base every trial varies).
                **tracker_params(settings),
                **base.flat_params(),
                "tune.study_storage": redact(settings.study_storage) if settings.study_storage else "",
                "tune.resolved_storage": redact(storage_url),
                "tune.trials_before": trials_before,
            }
        )
        mlflow.log_dict(space.model_dump(mode="json"), "tuning/search_space.json")
        mlflow.set_tags({"optuna.study_name": settings.study_name})
        parent_run_id = run.info.run_id
    return TuningPlan(
        settings=settings,
        storage=storage_url,
        space=space,
        base=base,
        deadline=time.time() + settings.max_minutes * 60,
        parent_run_id=parent_run_id,
        trials_before=trials_before,
    )


@dataclass(frozen=True)
class PruningLogger:
    """Forwards to the trial's MLflow logger and reports each epoch's validation AUC to Optuna.

    Raising :class:`optuna.TrialPruned` from ``log_metrics`` stops the training
    loop right after the epoch the pruner judged hopeless. Trials always run
    in one process, so the trial object never has to be pickled.
    """

    inner: MetricsLogger
    trial: optuna.Trial
    prune: bool = True
    """False in a multi-objective study: Optuna cannot prune on one of several objectives."""

    def log_params(self, params: Mapping[str, Any]) -> None:
        self.inner.log_params(params)

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        import optuna

        self.inner.log_metrics(metrics, step)
        if "val_auc" in metrics and self.prune:
            self.trial.report(float(metrics["val_auc"]), step)
            if self.trial.should_prune():
                raise optuna.TrialPruned(f"validation AUC {metrics['val_auc']:.4f} at epoch {step}")

    def log_artifacts(self, local_dir: Path, artifact_path: str) -> None:
        pass  # trial models are thrown away; the best parameters are retrained by the train step


def run_worker(
    plan: TuningPlan,
    worker_index: int,
    frame: pd.DataFrame,
    schema: DatasetSchema,
    tracking: TrackingStore,
) -> WorkerSummary:
    """Run this worker's quota of trials (or fewer, if the deadline passes); failures do not stop it."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    schema.check(frame, "tuning data")
    if plan.settings.multi_objective and not schema.protected_attributes:
        raise ValueError(
            "tune.objectives includes fairness_gap but the schema declares no protected_attributes; declare them "
            "(schema file) or set tune.objectives to [val_auc]"
        )
    study = open_study(plan, worker_index)
    states = {"complete": 0, "pruned": 0, "failed": 0}
    for _ in range(plan.quota(worker_index)):
        if time.time() >= plan.deadline:
            log.warning("worker %d: wall-time budget reached, starting no more trials", worker_index)
            break
        trial = study.ask()
        state = _run_trial(study, trial, plan, worker_index, frame, schema, tracking)
        states[state] += 1
    return WorkerSummary(**states)


def _run_trial(
    study: optuna.Study,
    trial: optuna.Trial,
    plan: TuningPlan,
    worker_index: int,
    frame: pd.DataFrame,
    schema: DatasetSchema,
    tracking: TrackingStore,
) -> str:
    import mlflow
    import optuna

    from components.tune.space import apply
    from training.metrics_logger import MlflowLogger
    from training.trainer import train

    tags = {
        "optuna.study_name": plan.settings.study_name,
        "optuna.trial_number": str(trial.number),
        "optuna.worker": str(worker_index),
    }
    state, value, error, gap = "failed", None, "", 0.0
    with tracking.task_run(
        TRIAL_TASK_NAME, run_name=f"trial-{trial.number}", parent_run_id=plan.parent_run_id, tags=tags
    ) as run:
        trial.set_user_attr("mlflow_run_id", run.info.run_id)
        try:
            params = plan.space.suggest(trial)
            mlflow.log_params({f"trial.{k}": v for k, v in params.items()})
            config = apply(plan.base, params)
            multi = plan.settings.multi_objective
            logger = PruningLogger(MlflowLogger(run.info.run_id, tracking), trial, prune=not multi)
            with tempfile.TemporaryDirectory(prefix="mlops-trial-") as scratch:
                result = train(frame, schema, config, Path(scratch) / "model", logger=logger)
            state, value = "complete", result.best_val_auc
            if multi:
                from components.tune.fairness_objective import trial_gap

                gap = trial_gap(result, frame, schema, config)
                mlflow.log_metric("trial_fairness_gap", gap)
        except optuna.TrialPruned as pruned:
            state, error = "pruned", str(pruned)
        except Exception as exc:  # a crashing trial is recorded and the study goes on
            error = f"{type(exc).__name__}: {exc}"
            log.warning("trial %d failed: %s", trial.number, error)
        finally:
            if state == "complete":
                study.tell(trial, [float(value or 0.0), gap] if plan.settings.multi_objective else value)
                mlflow.log_metric("trial_value", float(value or 0.0))
            else:
                failed = optuna.trial.TrialState.FAIL
                study.tell(trial, state=optuna.trial.TrialState.PRUNED if state == "pruned" else failed)
            mlflow.set_tags({STATE_TAG: state, **({"optuna.reason": error[:500]} if error else {})})
            mlflow.end_run(
                status=MLFLOW_STATUS[state]
            )  # the run's own status; the scope then finds it closed
    print(f"tune worker {worker_index}: trial {trial.number} {state}" + (f" ({error})" if error else ""))
    figure = f"trial {trial.number} {state}" + (f", val AUC {value:.4f}" if value is not None else "")
    if plan.settings.multi_objective and state == "complete":
        figure += f", fairness gap {gap:.4f}"
    emit(Progress(unit="trial", total=plan.quota(worker_index), advance=1, text=figure))
    return state
