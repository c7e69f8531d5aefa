"""``mlops tune`` and the tuning pipeline under KFP's local runner: 2 workers, one shared study, resume."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest

from cli.local_run import run_locally
from cli.main import main
from mlops.tracking.store import TrackingStore
from mlops.workspace import Workspace
from pipelines.tuning.pipeline import FORM, tuning_pipeline

pytestmark = pytest.mark.slow

SMALL = [
    "data.sample.rows=1000",
    "train.epochs=2",
    "train.patience=1",
    "train.model.hidden_units=16",
    "train.precision=fp32",
    "train.batch_size=128",
]
SPACE = """parameters:
  learning_rate: {type: float, low: 0.001, high: 0.05, log: true}
  dropout: {type: float, low: 0.0, high: 0.3}
  hidden_units: {type: categorical, choices: [[16], [32, 16]]}
  epochs: {type: int, low: 2, high: 3}
"""


def _tune(workspace: Workspace, *argv: str) -> int:
    return main(["--workspace", str(workspace.root), "tune", *argv])


def test_two_workers_share_one_study_and_a_rerun_resumes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = Workspace(tmp_path / "ws")
    space = tmp_path / "space.yaml"
    space.write_text(SPACE)
    sets = [arg for item in SMALL for arg in ("--set", item)]

    code = _tune(
        workspace,
        "--tune.trials",
        "4",
        "--tune.workers",
        "2",
        "--tune.study-name",  # dashes or underscores: the same setting
        "s",
        "--tune.search_space_file",
        str(space),
        *sets,
    )
    printed = capsys.readouterr().out
    assert code == 0, printed[-3000:]
    assert "Tuning finished in" in printed and "best trial" in printed and "hidden_units" in printed
    # Each worker's trials reach the console as progress events (a live bar), kept in the workers' logs.
    run_dir = Path(next(line for line in printed.splitlines() if "pipeline run " in line).split()[-1])
    worker_logs = [p.read_text() for p in (run_dir / "logs").glob("run-tuning-worker*.log")]
    assert sum(log.count('::mlops-progress:: {"unit":"trial"') for log in worker_logs) == 4
    assert "::mlops-progress::" not in printed and "KFP Executor" not in printed

    storage = f"sqlite:///{workspace.root / 'optuna.db'}"
    study = optuna.load_study(study_name="s", storage=storage)
    assert sorted(t.number for t in study.trials) == [0, 1, 2, 3]
    assert {t.state for t in study.trials} <= {
        optuna.trial.TrialState.COMPLETE,
        optuna.trial.TrialState.PRUNED,
    }

    # Same study name, run through the pipeline directly: the stored trials are resumed, numbers continue.
    second = run_locally(
        tuning_pipeline,
        FORM.arguments(
            {
                "tracking.tracking_uri": workspace.tracking_uri,
                "tracking.artifact_root": workspace.artifact_root,
                "tune.study_name": "s",
                "tune.search_space_file": str(space),
                "tune.trials": 4,
                "tune.workers": 2,
                "data.sample.rows": 1000,
                "train.epochs": 2,
                "train.patience": 1,
                "train.model.hidden_units": [16],
                "train.precision": "fp32",
                "train.batch_size": 128,
                "tune.search_space": {"dropout": {"type": "float", "low": 0.0, "high": 0.1}},
            }
        ),
        workspace,
    )
    study = optuna.load_study(study_name="s", storage=storage)
    assert sorted(t.number for t in study.trials) == list(range(8))
    assert all(t.params["dropout"] <= 0.1 for t in study.trials if t.number >= 4)  # the dict override applied
    assert float(second.output) == pytest.approx(study.best_value)

    client = TrackingStore.from_uri(workspace.tracking_uri)._client
    experiment = client.get_experiment_by_name("tuning")
    assert experiment is not None
    parents = client.search_runs([experiment.experiment_id], "tags.`mlops.task` = 'tune'")
    assert len(parents) == 2
    for parent in parents:
        children = client.search_runs(
            [experiment.experiment_id], f"tags.`mlflow.parentRunId` = '{parent.info.run_id}'"
        )
        assert len(children) == 4
        assert {c.data.tags["optuna.worker"] for c in children} == {"0", "1"}  # both workers ran trials
        assert parent.data.metrics["trials_total"] in (4.0, 8.0)
        assert "best.learning_rate" in parent.data.params

    # Bad input stops at the set-up step, before any trial.
    bad = tmp_path / "bad.yaml"
    bad.write_text("parameters:\n  learning_rate: {type: float, low: 0.1, high: 0.01}\n")
    code = _tune(
        workspace, "--tune.trials", "2", "--tune.study_name", "s", "--tune.search_space_file", str(bad), *sets
    )
    printed = capsys.readouterr().out
    assert code == 1
    assert "Run FAILED at step create-tuning-study" in printed
    assert "low 0.1 is greater than high 0.01" in printed
    assert len(optuna.load_study(study_name="s", storage=storage).trials) == 8
