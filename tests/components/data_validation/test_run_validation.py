"""The data_validation component as a pipeline task: ``run_validation`` (the validated dataset written as
Parquet, the HTML and JSON reports kept on failure and on unparseable data, the MLflow run and its
artifacts, validation before the first tracking call, a user's suite) and the KFP component (its contract,
and a run under the KFP local runner). The suite itself is in test_validation_suite.py."""

from __future__ import annotations

import hashlib
import json
from functools import cached_property
from pathlib import Path

import mlflow
import pandas as pd
import pytest

from components.data_validation.suite_validation import ValidationFailed, run_validation
from mlops.data.dataset import DatasetError, DatasetSchema
from mlops.data.sample_data import SAMPLE_ALLOWED_LEAKS, SAMPLE_SCHEMA, SampleDataConfig, generate, write
from mlops.settings import section_values
from mlops.tracking.store import TrackingStore
from tests.components.data_validation.validation_files import _parse_html, _suite_file


@pytest.fixture
def context(tmp_path: Path) -> TrackingStore:
    # An explicit artifact root: MLflow's default for a SQLite store is ./mlruns in the working directory.
    return TrackingStore(
        tracking_uri=f"sqlite:///{tmp_path}/mlflow.db",
        experiment="t",
        pipeline_run_id="p1",
        artifact_root=(tmp_path / "artifacts").as_uri(),
    )


# --- run_validation: files, reports and MLflow --------------------------------------------------


def _paths(tmp_path: Path) -> dict[str, Path]:
    return {
        "dataset_out_path": tmp_path / "out" / "dataset",
        "html_path": tmp_path / "out" / "report_html",
        "json_path": tmp_path / "out" / "report_json",
    }


def _only_run(context: TrackingStore) -> mlflow.entities.Run:
    client = context._client
    experiment = client.get_experiment_by_name(context.experiment)
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id])
    assert len(runs) == 1
    return runs[0]


def _artifacts(context: TrackingStore, run: mlflow.entities.Run) -> set[str]:
    client = context._client
    return {a.path for a in client.list_artifacts(run.info.run_id, "validation")}


def test_run_validation_success_writes_parquet_reports_and_logs(
    tmp_path: Path, context: TrackingStore
) -> None:
    data = Path(write(str(tmp_path / "data.csv"), SampleDataConfig(rows=900, seed=12)))
    paths = _paths(tmp_path)

    digest, version = run_validation(str(data), SAMPLE_SCHEMA, None, context, **paths)

    assert digest == hashlib.sha256(data.read_bytes()).hexdigest()
    assert version == "1.0.0"
    pd.testing.assert_frame_equal(pd.read_parquet(paths["dataset_out_path"]), pd.read_csv(data))
    html, _ = _parse_html(paths["html_path"])
    assert "PASSED" in html
    assert json.loads(paths["json_path"].read_text())["success"] is True

    run = _only_run(context)
    assert run.info.status == "FINISHED"
    assert run.data.tags["mlops.task"] == "data_validation"
    assert run.data.tags["mlops.pipeline_run_id"] == "p1"
    assert run.data.params["dataset_digest"] == digest
    assert run.data.params["suite_version"] == "1.0.0"
    assert run.data.params["data_uri"] == str(data)
    assert run.data.metrics["rows"] == 900
    assert run.data.metrics["success"] == 1.0
    assert run.data.metrics["n_failed_expectations"] == 0
    assert _artifacts(context, run) == {"validation/report.html", "validation/report.json"}


def test_run_validation_failure_keeps_reports_and_writes_no_dataset(
    tmp_path: Path, context: TrackingStore
) -> None:
    frame = generate(SampleDataConfig(rows=900, seed=13))
    frame.loc[:100, "credit_score"] = 5000.0
    frame.to_parquet(tmp_path / "bad.parquet", index=False)
    paths = _paths(tmp_path)

    with pytest.raises(
        ValidationFailed, match=r"expect_column_values_to_be_between on column 'credit_score'.*5000\.0"
    ):
        run_validation(str(tmp_path / "bad.parquet"), SAMPLE_SCHEMA, "", context, **paths)

    assert not paths["dataset_out_path"].exists()
    html, _ = _parse_html(paths["html_path"])
    assert "FAILED" in html and "credit_score" in html
    assert json.loads(paths["json_path"].read_text())["n_failed"] == 1
    run = _only_run(context)
    assert run.info.status == "FAILED"
    assert run.data.metrics["success"] == 0.0
    assert run.data.metrics["n_failed_expectations"] == 1
    assert _artifacts(context, run) == {"validation/report.html", "validation/report.json"}


def test_run_validation_on_unparseable_data_still_reports(tmp_path: Path, context: TrackingStore) -> None:
    data = tmp_path / "broken.parquet"
    data.write_bytes(b"PAR1 this is not really parquet")
    paths = _paths(tmp_path)

    with pytest.raises(DatasetError, match="cannot parse dataset .*broken.parquet as Parquet"):
        run_validation(str(data), SAMPLE_SCHEMA, None, context, **paths)

    document = json.loads(paths["json_path"].read_text())
    assert [c["expectation"] for c in document["checks"]] == ["load_table"]
    assert "as Parquet" in document["checks"][0]["observed_text"]
    assert not paths["dataset_out_path"].exists()
    assert _only_run(context).info.status == "FAILED"


class _WatchedStore(TrackingStore):
    """A store that notes in ``order`` when its MLflow client is first asked for (the task's first tracking call)."""

    order: list[str] = []

    @cached_property
    def _client(self) -> mlflow.MlflowClient:
        self.order.append("tracking")
        return TrackingStore._client.func(self)  # type: ignore[attr-defined]


def test_run_validation_validates_before_it_first_asks_the_tracking_store(
    tmp_path: Path, context: TrackingStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first tracking task of a local run starts beside the run's tracking server: the suite runs while
    the server comes up, and the results are logged after (instead of the task waiting for it first)."""
    import components.data_validation.suite_validation as module

    order: list[str] = []
    validate = module.validate_and_prepare

    def noting(*args: object, **kwargs: object) -> object:
        order.append("validated")
        return validate(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(module, "validate_and_prepare", noting)
    monkeypatch.setattr(_WatchedStore, "order", order)
    store = _WatchedStore(context.tracking_uri, context.experiment, "p1", context.artifact_root)
    data = write(str(tmp_path / "data.csv"), SampleDataConfig(rows=300, seed=15))

    paths = _paths(tmp_path)
    run_validation(
        data, SAMPLE_SCHEMA, None, store, paths["dataset_out_path"], paths["html_path"], paths["json_path"]
    )

    assert order == ["validated", "tracking"]
    run = _only_run(context)
    assert run.info.status == "FINISHED" and run.data.params["data_uri"] == data
    assert run.data.metrics["rows"] == 300


def test_run_validation_with_a_user_suite(tmp_path: Path, context: TrackingStore) -> None:
    data = write(str(tmp_path / "data.csv"), SampleDataConfig(rows=300, seed=14))
    custom = {
        "name": "minimal",
        "version": "2.1.0",
        "expectations": [
            {"type": "expect_column_values_to_be_between", "kwargs": {"column": "age", "min_value": 18}},
            {"type": "expect_table_row_count_to_be_between", "kwargs": {"min_value": 100}},
        ],
    }
    suite_path = _suite_file(tmp_path, custom)

    _, version = run_validation(data, SAMPLE_SCHEMA, str(suite_path), context, **_paths(tmp_path))

    assert version == "2.1.0"
    assert len(json.loads(_paths(tmp_path)["json_path"].read_text())["checks"]) == 3


# --- the KFP component ---------------------------------------------------------------------------


def test_component_compiles_with_the_pipeline_contract(tmp_path: Path) -> None:
    from kfp import compiler

    from components.data_validation.component import validate_data

    compiler.Compiler().compile(validate_data, str(tmp_path / "validate.yaml"))
    spec = validate_data.component_spec
    # The schema, validation and model_validation sections arrive whole, lists and all (no setting unpacked).
    assert list(spec.inputs or {}) == [
        "data_uri", "is_sample", "schema", "validation", "model_validation", "tracking", "pipeline_run_id"
    ]  # fmt: skip
    assert {name: spec.inputs[name].type for name in ("schema", "validation", "model_validation")} == {
        "schema": "Dict", "validation": "Dict", "model_validation": "Dict"
    }  # fmt: skip
    outputs = spec.outputs or {}
    assert {name: outputs[name].type for name in outputs} == {
        "dataset": "system.Dataset@0.0.1",
        "report_html": "system.HTML@0.0.1",
        "report_json": "system.Artifact@0.0.1",
        "dataset_digest": "String",
        "suite_version": "String",
    }


def test_component_runs_under_the_kfp_local_runner(
    tmp_path: Path, context: TrackingStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os
    import sys

    from kfp import local

    from components.data_validation.component import validate_data

    monkeypatch.setenv(
        "PATH", os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    )
    data = write(str(tmp_path / "data.parquet"), SampleDataConfig(rows=400, seed=15))
    local.init(runner=local.SubprocessRunner(use_venv=False), pipeline_root=str(tmp_path / "root"))

    task = validate_data(
        data_uri=data,
        is_sample=True,
        schema=section_values(SAMPLE_SCHEMA),
        validation={"expectation_suite": "", "schema_uri": ""},
        model_validation={},
        tracking=context.settings(),
        pipeline_run_id="local-1",
    )

    assert task.outputs["dataset_digest"] == hashlib.sha256(Path(data).read_bytes()).hexdigest()
    assert task.outputs["suite_version"] == "1.0.0"
    dataset = task.outputs["dataset"]
    assert dataset.metadata["sha256"] == task.outputs["dataset_digest"]
    # The schema travels with the data: later steps read it from the artifact, not from parameters.
    # On the sample, with the column the sample acknowledges (its own fact, as its behavioural tests are).
    sample = SAMPLE_SCHEMA.model_copy(update={"allowed_leaks": SAMPLE_ALLOWED_LEAKS})
    assert DatasetSchema.model_validate(dataset.metadata["schema"]) == sample
    # On the sample, the sample's behavioural tests travel with it (nowhere else).
    assert [t["feature"] for t in dataset.metadata["behavioural"]["invariance"]] == [
        "region",
        "years_at_address",
    ]
    assert len(pd.read_parquet(dataset.path)) == 400
    assert "PASSED" in Path(task.outputs["report_html"].path).read_text()
    assert _only_run(context).data.tags["mlops.pipeline_run_id"] == "local-1"
