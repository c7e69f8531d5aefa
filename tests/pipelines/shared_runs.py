"""Pipeline runs that several tests of this package read, made once per pytest run (fixtures in conftest.py).

A training run costs minutes here: each step is a fresh Python process that imports MLflow, torch or Great
Expectations before it does seconds of work. Tests that only read what a run left share it; a test that
goes on to change the shared workspace (another run, another model) only adds to it, and the readers look
at their own run's folder, version and MLflow runs by id, never at "the only one there is".

Each group's tests carry its ``xdist_group`` marker, so ``pytest -n 2 --dist loadgroup`` (./test.sh) puts
them on one worker and the run is made once, not once per worker.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cli.local_run import LocalRun
from cli.main import main
from mlops.workspace import Workspace
from pipelines.training.pipeline import FORM

FRESH_TRAINING_GROUP = "fresh-training-run"
"""The tests reading :func:`fresh_training_run`'s workspace (tests/pipelines/test_training_pipeline_*.py)."""

TRAINING_FAST = {  # small, and still above the gates' AUC floor (test AUC about 0.77 on these rows)
    "data.sample.rows": 3000,
    "train.epochs": 8,
    "train.batch_size": 256,
    "train.model.hidden_units": [32, 16],
    "train.patience": 3,
    "registration.git_commit": "0123abc",
}


def training_arguments(workspace: Workspace, **extra: object) -> dict[str, object]:
    """The training pipeline's arguments (per-run parameters and whole sections) for these settings by address."""
    return FORM.arguments(
        {
            "tracking.tracking_uri": workspace.tracking_uri,
            "tracking.artifact_root": workspace.artifact_root,
            **TRAINING_FAST,
            **extra,
        }
    )


@dataclass(frozen=True)
class FreshTrainingRun:
    """The training pipeline run once in a new workspace with the step cache on (empty, so every step runs).

    ``version`` is the registered version as that run left it: later runs in this workspace move its aliases
    and re-decide its gates, so a test of what the first run did reads this copy.
    """

    workspace: Workspace
    cache: Path
    run: LocalRun
    version: Any


CENSUS_GROUP = "census-workspace"
"""The tests reading :func:`census_trained`'s workspace (tests/pipelines/test_user_data.py, test_two_models.py)."""

CENSUS_FAST = [
    "--train.epochs", "3", "--train.batch_size", "256", "--train.model.hidden_units", "32,16",
    "--model_validation.fairness.confidence", "0.95",
]  # fmt: skip


def census(rows: int = 1500, seed: int = 3) -> pd.DataFrame:
    """Census-like data: string labels (">50K"/"<=50K"), "?" for missing values, an ID column, and ``sex``."""
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 80, rows)
    hours = rng.normal(40, 10, rows).round(1)
    education = rng.choice(["school", "college", "degree", "doctorate"], rows, p=[0.4, 0.3, 0.2, 0.1])
    sex = rng.choice(["female", "male"], rows)
    lift = {"school": -1.0, "college": 0.0, "degree": 1.0, "doctorate": 1.5}
    logit = -1.0 + 0.04 * (age - 40) + 0.08 * (hours - 40) + np.vectorize(lift.get)(education)
    income = np.where(rng.random(rows) < 1 / (1 + np.exp(-logit)), ">50K", "<=50K")
    frame = pd.DataFrame(
        {
            "person_id": [f"P{i:06d}" for i in range(rows)],
            "age": age.astype(object),
            "hours_per_week": hours,
            "education": education.astype(object),
            "sex": sex,
            "income": income,
        }
    )
    frame.loc[rng.choice(rows, 60, replace=False), "education"] = "?"
    frame.loc[rng.choice(rows, 40, replace=False), "age"] = "?"
    return frame


def declare_census(data: Path, out: Path, workspace: Path) -> Path:
    """``mlops data init`` on census data: ``income`` the label, ``sex`` protected, the positive class
    favourable; the schema file it wrote (its model name comes from the data file's name)."""
    code = main(
        ["--workspace", str(workspace), "data", "init", "--data", str(data), "--label", "income",
         "--positive", ">50K", "--protected", "sex", "--favourable", "positive", "--out", str(out)]
    )  # fmt: skip
    assert code == 0
    return out / f"{data.stem}.schema.yaml"


@dataclass(frozen=True)
class CensusTrained:
    """Census data declared by ``mlops data init`` (``sex`` protected, the positive class favourable) and
    trained by ``mlops run training --data --schema`` with no other setting naming the model.

    ``exit_code`` is the training command's; ``run_dir`` its pipeline run's folder.
    """

    data: Path
    schema: Path
    workspace: Path
    exit_code: int
    run_dir: Path
