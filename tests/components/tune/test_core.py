"""Trials in-process against a real SQLite study and MLflow store: pruning, crashes, budget, fan-in."""

from __future__ import annotations

import time
from pathlib import Path

import mlflow
import optuna
import pandas as pd
import pytest

from components.tune.best import NoCompletedTrial, select_best
from components.tune.study import TuneSettings, TuningPlan
from components.tune.study_workers import prepare_study, run_worker
from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
from mlops.tracking.store import TrackingStore
from training.config import ModelConfig, TrainConfig

BASE = TrainConfig(
    epochs=3, batch_size=64, patience=0, model=ModelConfig(hidden_units=(16,)), precision="fp32"
)
GOOD = {"learning_rate": 0.03, "weight_decay": 0.0001}
FROZEN = {"learning_rate": 1e-7, "weight_decay": 0.0001}  # barely moves: AUC stays near chance
DIVERGING = {"learning_rate": 0.03, "weight_decay": 1e30}  # weights blow up: NaN logits crash evaluation
SPACE = {
    "learning_rate": {"type": "categorical", "choices": [0.03, 1e-7]},
    "weight_decay": {"type": "categorical", "choices": [0.0001, 1e30]},
}


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return generate(SampleDataConfig(rows=600, seed=1))


@pytest.fixture
def tracking(tmp_path: Path) -> TrackingStore:
    return TrackingStore(
        tracking_uri=f"sqlite:///{tmp_path}/mlflow.db",
        experiment="tune",
        pipeline_run_id="p",
        artifact_root=(tmp_path / "artifacts").as_uri(),
    )


def _plan(tmp_path: Path, tracking: TrackingStore, **settings: object) -> TuningPlan:
    values = {
        "study_name": "study",
        "trials": 4,
        "max_minutes": 5,
        "pruner_startup_trials": 1,
    }
    values["pruner_warmup_epochs"] = 0
    return prepare_study(
        TuneSettings.model_validate({**values, **settings}),
        BASE,
        f"sqlite:///{tmp_path}/optuna.db",
        tracking,
        space_overrides=SPACE,
        space_file=str(_space_file(tmp_path)),
    )


def _space_file(tmp_path: Path) -> Path:
    path = tmp_path / "space.yaml"
    path.write_text("parameters:\n  dropout: {type: float, low: 0.0, high: 0.0}\n")
    return path


def _child_runs(tracking: TrackingStore, parent: str) -> dict[int, mlflow.entities.Run]:
    client = tracking._client
    experiment = client.get_experiment_by_name(tracking.experiment)
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id], f"tags.`mlflow.parentRunId` = '{parent}'")
    return {int(run.data.tags["optuna.trial_number"]): run for run in runs}


def test_prunable_and_crashing_trials_are_recorded_and_the_study_goes_on(
    tmp_path: Path, tracking: TrackingStore, frame: pd.DataFrame
) -> None:
    plan = _plan(tmp_path, tracking, workers=1)
    study = optuna.load_study(study_name="study", storage=plan.storage)
    for params in (GOOD, FROZEN, DIVERGING, GOOD):
        study.enqueue_trial({**params, "dropout": 0.0})

    summary = run_worker(plan, 0, frame, SAMPLE_SCHEMA, tracking)

    assert (summary.complete, summary.pruned, summary.failed) == (2, 1, 1)
    states = [t.state.name for t in study.get_trials()]
    assert states == ["COMPLETE", "PRUNED", "FAIL", "COMPLETE"]  # the crash did not stop the study
    pruned = study.trials[1]
    assert len(pruned.intermediate_values) < BASE.epochs  # stopped early, after reporting its AUC
    assert max(pruned.intermediate_values.values()) < min(study.trials[0].intermediate_values.values())

    runs = _child_runs(tracking, plan.parent_run_id)
    assert [runs[n].data.tags["optuna.state"] for n in range(4)] == [
        "complete",
        "pruned",
        "failed",
        "complete",
    ]
    assert [runs[n].info.status for n in range(4)] == ["FINISHED", "KILLED", "FAILED", "FINISHED"]
    assert "ValueError: Input contains NaN" in runs[2].data.tags["optuna.reason"]
    assert runs[0].data.params["trial.learning_rate"] == "0.03"
    assert runs[0].data.params["train.learning_rate"] == "0.03"  # the training core's own params, by address
    history = tracking.metric_history(runs[0].info.run_id, "val_auc")
    assert [m.step for m in history] == [1, 2, 3]  # intermediate values, per epoch

    best = select_best(plan, tracking)
    assert best.number in (0, 3) and best.params["learning_rate"] == 0.03
    assert best.config.learning_rate == 0.03 and best.config.epochs == BASE.epochs
    assert best.states == {"complete": 2, "pruned": 1, "fail": 1}
    parent = tracking.get_run(plan.parent_run_id)
    assert parent.data.params["best.learning_rate"] == "0.03"
    assert parent.data.metrics["best_val_auc"] == pytest.approx(best.value)
    assert parent.data.metrics["trials_pruned"] == 1
    artifacts = {a.path for a in tracking._client.list_artifacts(plan.parent_run_id, "tuning")}
    assert {
        "tuning/optimization_history.png",
        "tuning/param_importances.png",
        "tuning/search_space.json",
    } <= artifacts


def test_wall_time_budget_starts_no_trial_and_fan_in_says_nothing_completed(
    tmp_path: Path, tracking: TrackingStore, frame: pd.DataFrame
) -> None:
    plan = _plan(tmp_path, tracking, max_minutes=0.0001)
    time.sleep(0.05)
    assert run_worker(plan, 0, frame, SAMPLE_SCHEMA, tracking).trials == 0
    with pytest.raises(NoCompletedTrial, match="study 'study' has no completed trial"):
        select_best(plan, tracking)


def test_quota_splits_the_budget_exactly_and_resume_counts_on(
    tmp_path: Path, tracking: TrackingStore
) -> None:
    plan = _plan(tmp_path, tracking, trials=5, workers=3)
    assert [plan.quota(i) for i in range(3)] == [2, 2, 1]
    assert plan.worker_count == 3
    assert _plan(tmp_path, tracking, trials=1, workers=3).worker_count == 1
    with pytest.raises(ValueError, match="worker_index 3 is outside 0..2"):
        plan.quota(3)
    study = optuna.load_study(study_name="study", storage=plan.storage)
    trial = study.ask()
    study.tell(trial, 0.6)
    assert _plan(tmp_path, tracking).trials_before == 1
    assert TuningPlan.load(_saved(plan, tmp_path)) == plan


def _saved(plan: TuningPlan, tmp_path: Path) -> Path:
    path = tmp_path / "plan" / "plan.json"
    plan.save(path)
    return path
