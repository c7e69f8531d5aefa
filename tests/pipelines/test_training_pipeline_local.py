"""The whole training pipeline under KFP's local runner, against a real MLflow SQLite store.

The registering run is the one tests/pipelines/test_training_pipeline_cache.py starts its cache from (a run
costs minutes: see tests/pipelines/shared_runs.py); that test's changed-setting run is also the one whose
version fails the metrics gate and stays challenger.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.local_run import PipelineFailed, run_locally
from components.data_validation.suite import DEFAULT_SUITE_PATH
from mlops.data.sample_data import SampleDataConfig, generate
from mlops.tracking.store import TrackingStore
from mlops.workspace import Workspace
from pipelines.training.pipeline import training_pipeline
from tests.pipelines.shared_runs import FRESH_TRAINING_GROUP, FreshTrainingRun, training_arguments

pytestmark = pytest.mark.slow


@pytest.mark.xdist_group(FRESH_TRAINING_GROUP)
def test_pipeline_registers_and_promotes_a_model(fresh_training_run: FreshTrainingRun) -> None:
    workspace, result = fresh_training_run.workspace, fresh_training_run.run
    version = str(result.output)

    client = TrackingStore.from_uri(workspace.tracking_uri)._client
    registered = fresh_training_run.version  # as this run left it: later runs in the workspace move aliases
    assert str(registered.version) == version
    assert set(registered.aliases) == {"challenger", "champion"}
    tags = registered.tags
    assert tags["mlops.decision"] == "promote", tags.get("mlops.reason")
    assert tags["mlops.git_commit"] == "0123abc"
    assert len(tags["mlops.dataset_digest"]) == 64
    assert tags["mlops.suite_version"]
    assert tags["mlops.kfp_run_id"]
    assert len(tags["mlops.onnx_sha256"]) == 64
    assert client.get_run(tags["mlops.train_run_id"]).data.metrics["val_auc"] > 0.6

    # Every task logged a run tagged with the same pipeline run id.
    experiment = client.get_experiment_by_name("training")
    assert experiment is not None
    runs = client.search_runs(
        [experiment.experiment_id],
        filter_string=f"tags.`mlops.pipeline_run_id` = '{tags['mlops.kfp_run_id']}'",
    )
    tasks = {run.data.tags["mlops.task"] for run in runs}
    assert {
        "data_validation",
        "train",
        "evaluate",
        "register",
        "gate_metrics",
        "gate_model_validation",
        "gate_overall",
    } <= tasks
    assert result.run_dir is not None and (result.run_dir / "validate-data" / "report_html").exists()


def test_corrupt_data_stops_at_validation_and_registers_nothing(tmp_path: Path) -> None:
    frame = generate(SampleDataConfig(rows=1500, seed=1))
    frame.loc[:200, "credit_score"] = 5000.0  # far outside the plausible range
    data = tmp_path / "corrupt.csv"
    frame.to_csv(data, index=False)
    workspace = Workspace(tmp_path / "ws")

    with pytest.raises(PipelineFailed) as failure:
        # User data declares its own suite; here the credit suite, which the file is shaped for.
        arguments = training_arguments(
            workspace, **{"data.uri": str(data), "validation.expectation_suite": str(DEFAULT_SUITE_PATH)}
        )
        run_locally(training_pipeline, arguments, workspace)
    assert failure.value.task == "validate-data"
    assert "credit_score" in failure.value.reason
    assert failure.value.run_dir is not None
    assert (failure.value.run_dir / "validate-data" / "report_html").exists()

    client = TrackingStore.from_uri(workspace.tracking_uri)._client
    assert client.search_registered_models() == []
