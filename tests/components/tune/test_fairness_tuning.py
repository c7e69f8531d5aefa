"""Fairness-aware tuning: the gap matches fairlearn, the declared rule is pinned at its limit, a real
multi-objective study logs its Pareto front and hands on the rule's trial."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import optuna
import pytest
from fairlearn.metrics import demographic_parity_difference, equalized_odds_difference
from pydantic import ValidationError

from components.tune.best import select_best
from components.tune.fairness_objective import MIN_GROUP_ROWS, fairness_gap
from components.tune.pareto import FrontPoint, NoFairTrial, choose
from components.tune.study import StudyStorageError, TuneSettings
from components.tune.study_workers import prepare_study, run_worker
from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
from mlops.tracking.store import TrackingStore
from training.config import ModelConfig, TrainConfig

BASE = TrainConfig(
    epochs=2, batch_size=64, patience=0, model=ModelConfig(hidden_units=(16,)), precision="fp32"
)
SPACE = {"learning_rate": {"type": "categorical", "choices": [0.03, 0.001]}}


def test_gap_is_fairlearns_largest_disparity() -> None:
    rng = np.random.default_rng(3)
    n = 900
    groups = rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2])
    y = rng.integers(0, 2, n)
    p = np.clip(rng.random(n) + 0.2 * (groups == "a") + 0.1 * y, 0, 1)
    expected = max(
        demographic_parity_difference(y, p >= 0.5, sensitive_features=groups),
        equalized_odds_difference(y, p >= 0.5, sensitive_features=groups),
    )
    assert fairness_gap(y, p, [groups]) == pytest.approx(expected)
    # Two attributes: the larger gap counts; a group under the minimum size is left out.
    fair = np.where(np.arange(n) % 2 == 0, "x", "y")
    assert fairness_gap(y, p, [fair, groups]) == pytest.approx(max(expected, fairness_gap(y, p, [fair])))
    tiny = groups.copy()
    tiny[: MIN_GROUP_ROWS - 1] = "tiny"
    rest = tiny != "tiny"
    assert fairness_gap(y, p, [tiny]) == pytest.approx(
        max(
            demographic_parity_difference(y[rest], p[rest] >= 0.5, sensitive_features=tiny[rest]),
            equalized_odds_difference(y[rest], p[rest] >= 0.5, sensitive_features=tiny[rest]),
        )
    )


def test_rule_takes_the_best_auc_within_the_limit() -> None:
    points = [
        FrontPoint(0, 0.80, 0.15, {}),
        FrontPoint(1, 0.78, 0.10, {}),  # exactly at the limit: qualifies
        FrontPoint(2, 0.75, 0.02, {}),
        FrontPoint(3, 0.78, 0.05, {}),  # same AUC as 1, lower gap: wins the tie
    ]
    assert choose(points, 0.10).number == 3
    assert choose(points[:3], 0.10).number == 1
    assert choose(points[:3], 0.10 - 1e-9).number == 2  # just under the limit: 1 no longer qualifies
    assert choose(points, 0.15).number == 0
    with pytest.raises(NoFairTrial, match=r"the fairest is trial 2 \(gap 0.0200, val AUC 0.7500\)"):
        choose(points, 0.01)


def test_objectives_are_validated() -> None:
    assert TuneSettings(objectives=("val_auc", "fairness_gap")).multi_objective
    assert not TuneSettings().multi_objective
    for bad in (("fairness_gap",), ("val_auc", "val_auc"), ("fairness_gap", "val_auc")):
        with pytest.raises(ValidationError, match="list val_auc first"):
            TuneSettings(objectives=bad)
    with pytest.raises(ValidationError, match=r"objectives \['latency'\] unknown"):
        TuneSettings(objectives=("val_auc", "latency"))


@pytest.fixture
def tracking(tmp_path: Path) -> TrackingStore:
    return TrackingStore(
        tracking_uri=f"sqlite:///{tmp_path}/mlflow.db", experiment="tune", pipeline_run_id="p",
        artifact_root=(tmp_path / "artifacts").as_uri(),
    )  # fmt: skip


def test_multi_objective_study_logs_the_front_and_hands_on_the_rules_trial(
    tmp_path: Path, tracking: TrackingStore
) -> None:
    frame = generate(SampleDataConfig(rows=600, seed=1, bias=2.0))
    settings = TuneSettings(
        study_name="fair", trials=3, workers=1, max_minutes=5, objectives=("val_auc", "fairness_gap"),
        max_fairness_gap=1.0,
    )  # fmt: skip
    storage = f"sqlite:///{tmp_path}/optuna.db"
    plan = prepare_study(settings, BASE, storage, tracking, space_overrides=SPACE)
    summary = run_worker(plan, 0, frame, SAMPLE_SCHEMA, tracking)
    assert summary.complete == 3 and summary.pruned == 0  # no pruning on one of several objectives
    study = optuna.load_study(study_name="fair", storage=storage)
    assert all(len(t.values) == 2 and not t.intermediate_values for t in study.trials)

    best = select_best(plan, tracking)
    front = {t.number: t.values for t in study.best_trials}
    assert best.number in front and best.value == max(v[0] for v in front.values())  # limit 1.0: best AUC
    artifacts = {a.path for a in tracking._client.list_artifacts(plan.parent_run_id, "tuning")}
    assert {"tuning/pareto_front.json", "tuning/pareto_front.png"} <= artifacts
    local = tracking.download(f"runs:/{plan.parent_run_id}/tuning/pareto_front.json", tmp_path / "dl")
    document = json.loads(Path(local).read_text())
    assert document["chosen_trial"] == best.number
    assert sorted(r["trial"] for r in document["front"]) == sorted(front)
    parent = tracking.get_run(plan.parent_run_id)
    assert parent.data.metrics["best_fairness_gap"] == pytest.approx(front[best.number][1])

    # The same study name with one objective is refused, naming both.
    with pytest.raises(StudyStorageError, match=r"optimises \['maximize', 'minimize'\]"):
        prepare_study(
            TuneSettings(study_name="fair", trials=1), BASE, storage, tracking, space_overrides=SPACE
        )


def test_fairness_objective_needs_protected_attributes(tmp_path: Path, tracking: TrackingStore) -> None:
    settings = TuneSettings(
        study_name="nofair", trials=1, max_minutes=5, objectives=("val_auc", "fairness_gap")
    )
    plan = prepare_study(settings, BASE, f"sqlite:///{tmp_path}/optuna.db", tracking, space_overrides=SPACE)
    schema = SAMPLE_SCHEMA.model_copy(update={"protected_attributes": ()})
    frame = generate(SampleDataConfig(rows=300, seed=1)).drop(columns=["sex"])
    with pytest.raises(ValueError, match="declares no protected_attributes"):
        run_worker(plan, 0, frame, schema, tracking)
