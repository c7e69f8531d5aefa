"""The retraining trigger: command lines, cooldown and audit records against a real MLflow registry."""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from components.retrain_trigger.config import RetrainSettings
from components.retrain_trigger.retraining import (
    COOLDOWN,
    TRIGGERED,
    TriggerError,
    champion_source,
    command,
    maybe_trigger,
    run_command,
)
from mlops.governance import audit
from mlops.tracking.store import TrackingStore
from mlops.vocabulary import LAST_RETRAIN_TAG

NOW = datetime(2026, 11, 20, 12, tzinfo=UTC)


@pytest.fixture
def registry(tmp_path: Path) -> TrackingStore:
    store = TrackingStore.from_uri(f"sqlite:///{tmp_path}/mlflow.db")
    store._client.create_registered_model("credit-default")
    return store


def test_local_and_kfp_command_lines() -> None:
    local = RetrainSettings(
        workspace="/ws", overrides={"train.epochs": "2", "registration.model_name": "other"}
    )
    argv = command(local, "credit-default", "sqlite:////ws/mlflow.db", "drift-monitor run abc")
    assert argv[1:] == [
        "-m", "cli.main", "--workspace", "/ws", "run", "training",
        "--set=registration.model_name=credit-default", "--set=registration.trigger=drift-monitor run abc",
        "--set=tracking.tracking_uri=sqlite:////ws/mlflow.db", "--set=train.epochs=2",
    ]  # fmt: skip
    kfp = RetrainSettings(target="kfp", kfp_host="http://kfp:8888", kfp_experiment="re")
    assert command(kfp, "m", "http://mlflow:5000", "t")[3:] == [
        "submit", "--pipeline", "training", "--experiment", "re", "--host", "http://kfp:8888",
        "--set=registration.model_name=m", "--set=registration.trigger=t",
    ]  # fmt: skip
    with pytest.raises(TriggerError, match="needs the retrain.workspace setting"):
        command(RetrainSettings(), "m", "", "t")


def test_the_command_line_is_one_the_training_pipeline_accepts() -> None:
    from cli.commands.run import parse_pipeline_arguments

    local = RetrainSettings(workspace="/ws", overrides={"train.epochs": "2", "data.sample.rows": "1500"})
    argv = command(local, "credit-default", "sqlite:////ws/mlflow.db", "drift-monitor run abc")
    assert parse_pipeline_arguments("training", argv[argv.index("training") + 1 :]) == {
        "registration.model_name": "credit-default",
        "registration.trigger": "drift-monitor run abc",
        "tracking.tracking_uri": "sqlite:////ws/mlflow.db",
        "train.epochs": 2,
        "data.sample.rows": 1500,
    }


def test_cooldown_holds_back_a_second_trigger_unless_forced(registry: TrackingStore, tmp_path: Path) -> None:
    started: list[list[str]] = []
    settings = RetrainSettings(workspace=str(tmp_path), cooldown_hours=6)

    def trigger(now: datetime, **extra: object) -> str:
        chosen = settings.model_copy(update=extra)
        return maybe_trigger(
            chosen, "credit-default", registry, "run-1", "drift", now, run=started.append
        ).status

    assert trigger(NOW) == TRIGGERED
    assert trigger(NOW + timedelta(hours=5, minutes=59)) == COOLDOWN
    assert trigger(NOW + timedelta(hours=1), force=True) == TRIGGERED
    assert trigger(NOW + timedelta(hours=7, minutes=1)) == TRIGGERED
    assert len(started) == 3 and "--set=registration.trigger=drift-monitor run run-1" in started[0]
    actions = [event.action for event in audit.read_events(tmp_path)]
    assert actions == ["retrain.triggered", "retrain.suppressed", "retrain.triggered", "retrain.triggered"]
    suppressed = audit.read_events(tmp_path)[1]
    assert "cooldown" in suppressed.details["why"] and suppressed.links == {"mlflow_run_id": "run-1"}
    tags = registry.registered_model("credit-default").tags
    assert tags[LAST_RETRAIN_TAG] == (NOW + timedelta(hours=7, minutes=1)).isoformat()


def test_a_failed_retraining_is_recorded_and_does_not_start_the_cooldown(
    registry: TrackingStore, tmp_path: Path
) -> None:
    settings = RetrainSettings(workspace=str(tmp_path))

    def failing(argv: list[str]) -> str:
        return run_command([sys.executable, "-c", "import sys; sys.exit('no data')"])

    with pytest.raises(TriggerError, match=r"failed \(exit 1\): no data"):
        maybe_trigger(settings, "credit-default", registry, "run-2", "drift", NOW, run=failing)
    assert [e.action for e in audit.read_events(tmp_path)] == ["retrain.triggered", "retrain.failed"]

    def refused_on_stdout(argv: list[str]) -> str:  # what `mlops run training` does with a refused run
        script = "print('step one ok'); print('train-model: declare the columns the champion uses'); exit(1)"
        return run_command([sys.executable, "-c", script])

    with pytest.raises(TriggerError, match=r"\(exit 1\): step one ok\ntrain-model: declare the columns"):
        maybe_trigger(settings, "credit-default", registry, "run-3", "drift", NOW, run=refused_on_stdout)
    client = registry._client
    assert LAST_RETRAIN_TAG not in client.get_registered_model("credit-default").tags


def _champion_trained_on(
    registry: TrackingStore, params: dict[str, str], version_tags: dict[str, str] | None = None
) -> None:
    """A champion version (with ``version_tags`` too) whose training pipeline run's validate-data step
    logged ``params``."""
    from mlops.vocabulary import CHAMPION, PIPELINE_RUN_ID_TAG

    client = registry._client
    experiment = client.create_experiment("training")
    for name, logged in (("data_validation", params), ("train", {"data.train_rows": "400"})):
        run = client.create_run(experiment, tags={PIPELINE_RUN_ID_TAG: "kfp-7", "mlflow.runName": name})
        for key, value in logged.items():
            client.log_param(run.info.run_id, key, value)
        if name == "train":
            train_run = run.info.run_id
    other = client.create_run(
        experiment, tags={PIPELINE_RUN_ID_TAG: "kfp-8", "mlflow.runName": "data_validation"}
    )
    client.log_param(other.info.run_id, "data.uri", "/data/another-runs-table.csv")  # not the champion's run
    version = client.create_model_version(
        "credit-default",
        "file:///m",
        tags={"mlops.kfp_run_id": "kfp-7", "mlops.train_run_id": train_run, **(version_tags or {})},
    )
    client.set_registered_model_alias("credit-default", CHAMPION, version.version)


def test_a_retraining_trains_on_the_champions_own_data_and_schema_unless_told_otherwise(
    registry: TrackingStore,
) -> None:
    assert champion_source(registry, "credit-default") == {}  # no champion yet
    source = {"data.uri": "/data/loans.csv", "validation.schema_uri": "/data/loans.schema.yaml"}
    _champion_trained_on(registry, {"data_uri": "/data/loans.csv", **source})
    assert champion_source(registry, "credit-default") == source
    local = RetrainSettings(workspace="/ws", overrides={"data.uri": "/data/loans-2026-11.csv"})
    argv = command(
        local, "credit-default", "sqlite:////ws/mlflow.db", "t", champion_source(registry, "credit-default")
    )
    assert argv[argv.index("training") + 1 :] == [
        "--set=registration.model_name=credit-default", "--set=registration.trigger=t",
        "--set=tracking.tracking_uri=sqlite:////ws/mlflow.db",
        "--set=validation.schema_uri=/data/loans.schema.yaml", "--set=data.uri=/data/loans-2026-11.csv",
    ]  # fmt: skip


def test_a_champion_trained_from_the_feature_store_joins_its_entity_table_with_the_service_again(
    registry: TrackingStore,
) -> None:
    from mlops.vocabulary import feature_lineage_tags

    record = {
        "feature_service": "churn_service",
        "feature_views": {},
        "entity_table": {"uri": "/data/labels.csv", "sha256": "e" * 64},
        "source": {"repo": "/ws/features", "timestamp": "label_time", "allow_missing": True},
    }
    joined = "/ws/pipeline-runs/x/prepare-data/sample"
    schema = {"validation.schema_uri": "/data/churn.schema.yaml"}
    _champion_trained_on(registry, {"data.uri": joined, **schema}, feature_lineage_tags(record))
    assert champion_source(registry, "credit-default") == {
        "data.uri": "/data/labels.csv",  # the entity table, not the joined set in that run's folder
        "data.features.service": "churn_service",
        "data.features.repo": "/ws/features",
        "data.features.timestamp": "label_time",
        "data.features.allow_missing": "true",
        **schema,
    }


def test_a_champion_trained_on_the_sample_retrains_on_the_sample(registry: TrackingStore) -> None:
    _champion_trained_on(registry, {"data_uri": "/ws/pipeline-runs/x/prepare-data/sample"})
    assert champion_source(registry, "credit-default") == {}


def test_a_champion_whose_training_run_is_gone_retrains_on_the_defaults(registry: TrackingStore) -> None:
    from mlops.vocabulary import CHAMPION

    client = registry._client
    tags = {"mlops.kfp_run_id": "kfp-9", "mlops.train_run_id": "deleted-run"}
    version = client.create_model_version("credit-default", "file:///m", tags=tags)
    client.set_registered_model_alias("credit-default", CHAMPION, version.version)
    assert champion_source(registry, "credit-default") == {}
