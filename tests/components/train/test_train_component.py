"""The train component: core.run_training against a real MLflow store, and the KFP wrapper under kfp.local."""

# No `from __future__ import annotations`: KFP reads the pipeline function's annotations as real types.

from pathlib import Path

import pandas as pd
import pytest

from components.train.training_task import SECONDS_PREFIX, resolve_checkpoint_dir, run_training, time_line
from mlops.data.dataset import DatasetSchema
from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
from mlops.tracking.store import TrackingStore
from training.config import ModelConfig, TrainConfig
from training.model import load_model
from training.row_split import SplitRule
from training.trainer import PARTS

CONFIG = TrainConfig(
    epochs=3,
    batch_size=128,
    learning_rate=5e-3,
    model=ModelConfig(hidden_units=(32, 16)),
    precision="fp32",
    patience=2,
)


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    path = tmp_path / "validated.parquet"
    generate(SampleDataConfig(rows=3000, seed=4)).to_parquet(path, index=False)
    return path


def test_run_training_logs_params_metrics_and_model(
    dataset: Path, tracking: TrackingStore, tmp_path: Path
) -> None:
    outcome = run_training(
        dataset_path=str(dataset),
        schema=SAMPLE_SCHEMA,
        config=CONFIG,
        store=tracking,
        model_dir=tmp_path / "out" / "model",
        test_data_path=tmp_path / "out" / "test.parquet",
        checkpoint_dir=tmp_path / "out" / "checkpoints",
    )

    client = tracking._client
    run = client.get_run(outcome.run_id)
    assert run.info.status == "FINISHED"
    assert run.data.tags["mlops.task"] == "train"
    assert run.data.tags["mlops.pipeline_run_id"] == "test-run"
    assert len(run.data.tags["mlops.dataset_digest"]) == 64
    params = run.data.params
    assert params["train.learning_rate"] == "0.005" and params["train.model.hidden_units"] == "32,16"
    assert params["system.torch_version"].startswith("2.") and params["system.precision"] == "fp32"
    assert params["system.nproc"] == "1" and int(params["system.cpu_count"]) >= 1
    # 14 numeric features and 6 categorical ones (the protected `sex` is no input) embedded 4 wide: 38 inputs
    assert params["system.macs_per_step"] == str((38 * 32 + 32 * 16 + 16 * 1) * CONFIG.batch_size)
    auc_history = client.get_metric_history(outcome.run_id, "val_auc")
    assert sorted(m.step for m in auc_history) == list(range(1, outcome.epochs_run + 1))
    assert max(m.value for m in auc_history) == pytest.approx(outcome.val_auc)
    assert run.data.metrics["best_val_auc"] == pytest.approx(outcome.val_auc)
    assert {m.key for m in client.get_metric_history(outcome.run_id, "train_loss")} == {"train_loss"}
    artifacts = {a.path for a in client.list_artifacts(outcome.run_id, "model")}
    assert artifacts == {"model/model.pt", "model/feature_spec.json", "model/model_config.json"}

    assert outcome.val_auc > 0.65 and outcome.samples_per_second > 0
    model = load_model(tmp_path / "out" / "model")
    test = pd.read_parquet(tmp_path / "out" / "test.parquet")
    assert list(test.columns) == list(generate(SampleDataConfig(rows=5)).columns)
    assert len(test) == pytest.approx(0.15 * 3000, rel=0.15)  # a hash split: binomial around 450
    rule = SplitRule.from_json(outcome.split_rule)  # what the register step records on the version
    assert (rule.key_columns, rule.test_fraction) == (tuple(sorted(SAMPLE_SCHEMA.columns)), 0.15)
    assert run.data.tags["mlops.split"] == outcome.split_rule
    assert (rule.assign(test) == "test").all()  # the rule reproduces this run's test rows
    assert model.spec.names == SAMPLE_SCHEMA.features
    assert (tmp_path / "out" / "checkpoints" / "last.pt").is_file()

    # where the step's time went: every part once, the loop's own parts inside the loop, inside the ranks
    seconds = {
        k.removeprefix(SECONDS_PREFIX): v for k, v in run.data.metrics.items() if k.startswith(SECONDS_PREFIX)
    }
    assert set(seconds) == {"read", "test_split", *PARTS}
    assert all(value >= 0 for value in seconds.values())
    inside = seconds["validation"] + seconds["checkpoints"] + seconds["logging"]
    assert 0 < inside <= seconds["loop"] <= seconds["ranks"]
    line = time_line(seconds)
    assert line.startswith("train-model seconds: read ") and "(of loop: validation " in line
    assert line.count("validation") == 1


def test_failed_training_marks_the_run_failed(dataset: Path, tracking: TrackingStore, tmp_path: Path) -> None:
    schema = DatasetSchema(label="default", numeric_features=("no_such_column",))
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['no_such_column'\]"):
        run_training(str(dataset), schema, CONFIG, tracking, tmp_path / "m", tmp_path / "t.parquet", None)
    client = tracking._client
    experiment = client.get_experiment_by_name("tests")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id])
    assert [r.info.status for r in runs] == ["FAILED"]


def test_empty_checkpoint_dir_means_next_to_the_model(tmp_path: Path) -> None:
    assert resolve_checkpoint_dir("", tmp_path / "task" / "model") == tmp_path / "task" / "checkpoints"
    assert resolve_checkpoint_dir("  ", tmp_path / "m") == tmp_path / "checkpoints"
    assert resolve_checkpoint_dir("/pv/ckpt", tmp_path / "m") == Path("/pv/ckpt")


@pytest.mark.slow
def test_component_runs_under_kfp_local(dataset: Path, tmp_path: Path) -> None:
    from kfp import dsl

    from cli.local_run import run_locally
    from components.train.component import train_model
    from mlops.data.dataset import SCHEMA_METADATA_KEY
    from mlops.settings import section_values
    from mlops.workspace import Workspace

    @dsl.pipeline(name="train-only")
    def train_only(data: str, tracking_uri: str, artifact_root: str) -> float:
        imported = dsl.importer(
            artifact_uri=data,
            artifact_class=dsl.Dataset,
            metadata={SCHEMA_METADATA_KEY: section_values(SAMPLE_SCHEMA)},
        )
        task = train_model(
            dataset=imported.output,
            train_config={
                "epochs": 2,
                "batch_size": 128,
                "learning_rate": 0.005,
                "weight_decay": 0.0001,
                "model": {"hidden_units": [16], "dropout": 0.1},
                "patience": 2,
                "seed": 0,
                "nproc": 1,
                "precision": "fp32",
            },
            train_task={"checkpoint_dir": ""},
            model_name="train-only-model",
            tracking={
                "tracking_uri": tracking_uri,
                "experiment": "component-test",
                "artifact_root": artifact_root,
            },
            pipeline_run_id="local",
        )
        return task.outputs["val_auc"]

    workspace = Workspace(tmp_path / "ws")
    result = run_locally(
        train_only,
        {
            "data": str(dataset),
            "tracking_uri": workspace.tracking_uri,
            "artifact_root": workspace.artifact_root,
        },
        workspace,
    )
    assert 0.6 < float(result.output) <= 1.0
    assert result.run_dir is not None
    task_dir = result.run_dir / "train-model"
    assert load_model(task_dir / "model").config.hidden_units == (16,)
    assert len(pd.read_parquet(task_dir / "test_data")) == pytest.approx(450, rel=0.15)
    assert (task_dir / "checkpoints" / "last.pt").is_file()
    client = TrackingStore.from_uri(workspace.tracking_uri)._client
    experiment = client.get_experiment_by_name("component-test")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id])
    assert [r.data.tags["mlops.task"] for r in runs] == ["train"]
    assert runs[0].data.metrics["best_val_auc"] == pytest.approx(float(result.output))


def test_the_task_settings_pick_the_launcher_that_runs_the_ranks() -> None:
    from pydantic import ValidationError

    from components.train.config import TrainTaskSettings
    from components.train.training_task import launcher_for
    from training.launcher import InProcessLauncher, LocalProcessesLauncher

    assert isinstance(launcher_for(TrainTaskSettings(), nproc=1), InProcessLauncher)
    assert isinstance(launcher_for(TrainTaskSettings(launcher="local"), nproc=2), LocalProcessesLauncher)
    from training.kubernetes_config import KubernetesJobSettings
    from training.kubernetes_launcher import KubernetesLauncher

    cluster = KubernetesJobSettings(namespace="team-dev", staging_uri="s3://mlops/jobs", workers=2)
    launcher = launcher_for(TrainTaskSettings(launcher="trainjob", cluster=cluster), nproc=2)
    assert isinstance(launcher, KubernetesLauncher) and launcher.settings == cluster
    with pytest.raises(ValidationError, match=r"launcher\n  Input should be 'local' or 'trainjob'"):
        TrainTaskSettings(launcher="mpijob")  # type: ignore[arg-type]


def test_the_removed_pytorchjob_launcher_is_refused_with_the_fix() -> None:
    """A config written for the Training Operator launcher is told what replaced it, not shown a bare list."""
    from pydantic import ValidationError

    from components.train.config import TrainTaskSettings

    with pytest.raises(ValidationError) as refused:
        TrainTaskSettings(launcher="pytorchjob")  # type: ignore[arg-type]
    message = str(refused.value)
    assert "launcher 'pytorchjob'" in message and "Training Operator" in message
    assert "Trainer v2" in message and "--set train_task.launcher=trainjob" in message
    assert "Input should be" not in message, "the bare literal error would not say what to do"
