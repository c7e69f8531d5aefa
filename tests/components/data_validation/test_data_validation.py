"""The data_validation component: the built-in suite, GE runs, reports, MLflow logging, the KFP wrapper."""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable
from functools import cached_property
from html.parser import HTMLParser
from pathlib import Path

import mlflow
import pandas as pd
import pytest

from components.data_validation.data_validation import (
    DEFAULT_SUITE_PATH,
    DataValidationResult,
    Suite,
    SuiteError,
    ValidationFailed,
    load_suite,
    run_validation,
    validate,
    write_reports,
)
from mlops.data.dataset import DatasetError, DatasetSchema
from mlops.data.sample_data import (
    CATEGORIES,
    SAMPLE_ALLOWED_LEAKS,
    SAMPLE_SCHEMA,
    SampleDataConfig,
    generate,
    write,
)
from mlops.settings import section_values
from mlops.tracking.store import TrackingStore


@pytest.fixture(scope="module")
def suite() -> Suite:
    return load_suite(DEFAULT_SUITE_PATH)


@pytest.fixture
def context(tmp_path: Path) -> TrackingStore:
    # An explicit artifact root: MLflow's default for a SQLite store is ./mlruns in the working directory.
    return TrackingStore(
        tracking_uri=f"sqlite:///{tmp_path}/mlflow.db",
        experiment="t",
        pipeline_run_id="p1",
        artifact_root=(tmp_path / "artifacts").as_uri(),
    )


class _Tags(HTMLParser):
    """Collects tags and fails on unbalanced table markup, so 'valid HTML' means something."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.open_tables = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.open_tables += tag == "table"

    def handle_endtag(self, tag: str) -> None:
        self.open_tables -= tag == "table"


def _parse_html(path: Path) -> tuple[str, _Tags]:
    text = path.read_text(encoding="utf-8")
    parser = _Tags()
    parser.feed(text)
    parser.close()
    assert text.startswith("<!DOCTYPE html>") and parser.open_tables == 0
    assert {"html", "head", "body", "table", "tr", "td"} <= set(parser.tags)
    return text, parser


def _failed(result: DataValidationResult, expectation: str, column: str | None) -> str:
    matches = [c for c in result.failed if c.expectation == expectation and c.column == column]
    assert matches, f"{expectation} on {column} did not fail; failed: {[c.describe() for c in result.failed]}"
    return matches[0].observed_text


# --- the built-in suite ------------------------------------------------------------------------


def test_builtin_suite_is_versioned_and_matches_the_sample_schema(suite: Suite) -> None:
    assert suite.name == "credit_default"
    assert suite.version == "1.0.0"
    existing = {e.column for e in suite.expectations if e.type == "expect_column_to_exist"}
    assert existing == set(SAMPLE_SCHEMA.columns)
    value_sets = {e.column: e.kwargs["value_set"] for e in suite.expectations if e.type.endswith("_in_set")}
    for column, values in CATEGORIES.items():
        assert sorted(value_sets[column]) == sorted(values)
    assert value_sets["default"] == [0, 1]


@pytest.mark.parametrize(
    "config",
    [
        SampleDataConfig(rows=1000, seed=0),
        SampleDataConfig(rows=1000, seed=1),
        SampleDataConfig(rows=1000, seed=2),
        SampleDataConfig(rows=1000, seed=3, drift=1.0),
        SampleDataConfig(rows=1000, seed=4, drift=1.0, bias=2.0),
    ],
    ids=["seed0", "seed1", "seed2", "drift1", "drift1-bias2"],
)
def test_suite_passes_on_clean_and_drifted_sample_data(suite: Suite, config: SampleDataConfig) -> None:
    result = validate(generate(config), SAMPLE_SCHEMA, suite)
    assert result.success, [c.describe() for c in result.failed]
    assert len(result.checks) == len(suite.expectations) + 1  # plus the schema check
    assert result.checks[0].expectation == "dataset_schema"
    # Checks come back in suite order, each with its own column.
    assert [c.column for c in result.checks[1:]] == [e.column for e in suite.expectations]


def test_pandas_extension_dtypes_pass_the_type_checks(suite: Suite) -> None:
    frame = generate(SampleDataConfig(rows=800, seed=5))
    frame = frame.astype({"region": "category", "education": "string", "default": "Int64", "age": "Float64"})
    result = validate(frame, SAMPLE_SCHEMA, suite)
    assert result.success, [c.describe() for c in result.failed]


# --- corruption is caught and named ------------------------------------------------------------


def _set(
    column: str, value: float | str, rows: slice = slice(0, 40)
) -> Callable[[pd.DataFrame], pd.DataFrame]:
    def mutate(frame: pd.DataFrame) -> pd.DataFrame:
        frame.loc[rows, column] = value
        return frame

    return mutate


def _blank(column: str, every: int) -> Callable[[pd.DataFrame], pd.DataFrame]:
    def mutate(frame: pd.DataFrame) -> pd.DataFrame:
        frame[column] = frame[column].mask(frame.index % every == 0)
        return frame

    return mutate


@pytest.mark.parametrize(
    ("mutate", "expectation", "column", "observed"),
    [
        (_set("credit_score", 5000.0), "expect_column_values_to_be_between", "credit_score", "e.g. 5000.0"),
        (_set("home_ownership", "castle"), "expect_column_values_to_be_in_set", "home_ownership", "'castle'"),
        (_blank("income", 4), "expect_column_values_to_not_be_null", "income", "27.00% null"),
        (_set("default", 0, slice(None)), "expect_column_mean_to_be_between", "default", "observed 0"),
        (_set("default", 2), "expect_column_values_to_be_in_set", "default", "e.g. 2"),
        (_set("interest_rate", 15.5), "expect_column_values_to_be_between", "interest_rate", "e.g. 15.5"),
        (lambda f: f.head(150), "expect_table_row_count_to_be_between", None, "observed 150"),
        (
            lambda f: f.astype({"months_employed": str}),
            "expect_column_values_to_be_in_type_list",
            "months_employed",
            "; column dtype str",
        ),
    ],
    ids=["out-of-range", "unknown-category", "too-many-nulls", "label-all-zero", "label-not-binary",
         "percent-not-fraction", "too-few-rows", "numbers-as-text"],
)  # fmt: skip
def test_corrupted_data_fails_naming_expectation_column_and_observation(
    suite: Suite,
    mutate: Callable[[pd.DataFrame], pd.DataFrame],
    expectation: str,
    column: str | None,
    observed: str,
) -> None:
    frame = mutate(generate(SampleDataConfig(rows=1000, seed=7)))
    result = validate(frame, SAMPLE_SCHEMA, suite, source="corrupt.csv")
    assert not result.success
    assert observed in _failed(result, expectation, column)

    message = str(ValidationFailed(result))
    assert "\n" not in message  # the pipeline runner shows the last exception line as the reason
    target = f"column {column!r}" if column else "table"
    assert f"{expectation} on {target}" in message
    assert observed in message
    assert "corrupt.csv" in message


def test_structural_problems_are_reported_alongside_the_suite(suite: Suite) -> None:
    frame = generate(SampleDataConfig(rows=600, seed=8)).drop(columns=["region"])
    frame.loc[:4, "default"] = None
    result = validate(frame, SAMPLE_SCHEMA, suite)
    schema_check = result.checks[0]
    assert not schema_check.success
    assert "lacks column(s) ['region']" in schema_check.observed_text
    assert _failed(result, "expect_column_to_exist", "region") == "column 'region' does not exist in the data"
    assert "does not exist" in _failed(result, "expect_column_values_to_be_in_set", "region")
    assert "% null" in _failed(result, "expect_column_values_to_not_be_null", "default")


def test_reports_are_valid_html_and_json(suite: Suite, tmp_path: Path) -> None:
    frame = _set("credit_score", 4000.0)(generate(SampleDataConfig(rows=500, seed=9)))
    result = validate(frame, SAMPLE_SCHEMA, suite, source="<bad & data>.csv", digest="ab" * 32)
    write_reports(result, tmp_path / "r" / "report.html", tmp_path / "r" / "report.json")

    html, _ = _parse_html(tmp_path / "r" / "report.html")
    assert "FAILED" in html and "credit_default 1.0.0" in html
    assert "&lt;bad &amp; data&gt;.csv" in html  # escaped, not injected
    assert html.count('<tr class="fail">') == 2 * len(result.failed)  # failure section + full table

    document = json.loads((tmp_path / "r" / "report.json").read_text())
    assert document["success"] is False
    assert document["n_failed"] == len(result.failed) >= 1
    assert document["suite_version"] == "1.0.0"
    row = next(c for c in document["checks"] if c["column"] == "credit_score" and not c["success"])
    assert row["kwargs"] == {"column": "credit_score", "min_value": 300, "max_value": 850}
    assert row["observed"]["examples"] == [4000.0]


def test_ge_writes_nothing_to_cwd_and_stays_quiet(
    suite: Suite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    gx_logger = logging.getLogger("great_expectations")
    monkeypatch.setattr(gx_logger, "level", logging.INFO)

    assert validate(generate(SampleDataConfig(rows=400, seed=1)), SAMPLE_SCHEMA, suite).success

    assert list(workdir.iterdir()) == []
    captured = capfd.readouterr()
    assert "Calculating Metrics" not in captured.err + captured.out
    assert gx_logger.level == logging.INFO  # our muting is undone afterwards


def test_validation_time_for_50k_rows(suite: Suite) -> None:
    frame = generate(SampleDataConfig(rows=50_000, seed=11))
    started = time.perf_counter()
    result = validate(frame, SAMPLE_SCHEMA, suite)
    elapsed = time.perf_counter() - started
    print(f"GE validation of 50k rows x {len(frame.columns)} columns, {len(suite.expectations)} expectations: "
          f"{elapsed:.2f} s")  # fmt: skip
    assert result.success
    assert elapsed < 60


# --- suite files --------------------------------------------------------------------------------


def _suite_file(tmp_path: Path, document: object) -> Path:
    path = tmp_path / "suite.json"
    path.write_text(json.dumps(document) if not isinstance(document, str) else document)
    return path


@pytest.mark.parametrize(
    ("document", "match"),
    [
        ("{not json", "is not valid JSON"),
        (
            {"name": "s", "expectations": [{"type": "expect_column_to_exist", "kwargs": {"column": "a"}}]},
            "version",
        ),
        ({"name": "s", "version": "1", "expectations": [{"type": "expect_column_to_exist"}]}, "version"),
        ({"name": "s", "version": "1.0.0", "expectations": []}, "expectations"),
        (
            {
                "name": "s",
                "version": "1.0.0",
                "expectations": [{"type": "expect_column_to_be_sparkly", "kwargs": {}}],
            },
            "#0 \\(expect_column_to_be_sparkly",
        ),
        (
            {
                "name": "s",
                "version": "1.0.0",
                "expectations": [
                    {"type": "expect_column_to_exist", "kwargs": {"column": "a"}},
                    {"type": "expect_column_values_to_be_between", "kwargs": {"min_value": 1}},
                ],
            },
            "#1 \\(expect_column_values_to_be_between",
        ),
        (
            {
                "name": "s",
                "version": "1.0.0",
                "expectations": [
                    {"type": "expect_column_values_to_be_between", "kwargs": {"column": "a", "min_vlaue": 1}}
                ],
            },
            "min_vlaue extra fields not permitted",
        ),
    ],
    ids=[
        "bad-json",
        "no-version",
        "bad-version",
        "no-expectations",
        "unknown-type",
        "missing-kwarg",
        "typo-kwarg",
    ],
)
def test_malformed_suites_are_rejected_at_load(tmp_path: Path, document: object, match: str) -> None:
    with pytest.raises(SuiteError, match=match):
        load_suite(_suite_file(tmp_path, document))


def test_missing_suite_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match=r"nope\.json does not exist"):
        load_suite(tmp_path / "nope.json")


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
    import components.data_validation.data_validation as module

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
