"""The whole training pipeline under KFP's local runner, against a real MLflow SQLite store."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.local_run import PipelineFailed, run_locally
from components.data_validation.suite import DEFAULT_SUITE_PATH
from mlops.data.sample_data import SampleDataConfig, generate
from mlops.tracking.store import TrackingStore
from mlops.workspace import Workspace
from pipelines.training.pipeline import FORM, training_pipeline

pytestmark = pytest.mark.slow

FAST = {
    "data.sample.rows": 3000,
    "train.epochs": 8,
    "train.batch_size": 256,
    "train.model.hidden_units": [32, 16],
    "train.patience": 3,
}


def _arguments(workspace: Workspace, **extra: object) -> dict[str, object]:
    """The pipeline's arguments (per-run parameters and whole sections) for these settings by address."""
    return FORM.arguments(
        {
            "tracking.tracking_uri": workspace.tracking_uri,
            "tracking.artifact_root": workspace.artifact_root,
            "registration.git_commit": "0123abc",
            **FAST,
            **extra,
        }
    )


def test_pipeline_registers_and_promotes_a_model(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path / "ws")
    result = run_locally(training_pipeline, _arguments(workspace), workspace)
    version = str(result.output)

    client = TrackingStore.from_uri(workspace.tracking_uri).client
    registered = client.get_model_version("credit-default", version)
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

    # A second run with an impossible floor is registered as challenger but never becomes champion.
    second = run_locally(training_pipeline, _arguments(workspace, **{"gate.auc_floor": 0.999}), workspace)
    second_version = client.get_model_version("credit-default", str(second.output))
    assert second_version.aliases == ["challenger"]
    assert second_version.tags["mlops.decision"] == "reject"
    assert "metrics gate: test_auc" in second_version.tags["mlops.reason"]
    assert "below the floor 0.9990" in second_version.tags["mlops.reason"]
    assert str(client.get_model_version_by_alias("credit-default", "champion").version) == version


def test_corrupt_data_stops_at_validation_and_registers_nothing(tmp_path: Path) -> None:
    frame = generate(SampleDataConfig(rows=1500, seed=1))
    frame.loc[:200, "credit_score"] = 5000.0  # far outside the plausible range
    data = tmp_path / "corrupt.csv"
    frame.to_csv(data, index=False)
    workspace = Workspace(tmp_path / "ws")

    with pytest.raises(PipelineFailed) as failure:
        # User data declares its own suite; here the credit suite, which the file is shaped for.
        arguments = _arguments(
            workspace, **{"data.uri": str(data), "validation.expectation_suite": str(DEFAULT_SUITE_PATH)}
        )
        run_locally(training_pipeline, arguments, workspace)
    assert failure.value.task == "validate-data"
    assert "credit_score" in failure.value.reason
    assert failure.value.run_dir is not None
    assert (failure.value.run_dir / "validate-data" / "report_html").exists()

    client = TrackingStore.from_uri(workspace.tracking_uri).client
    assert client.search_registered_models() == []
