"""The data_validation component's suite: the built-in suite (versioned, matching the sample schema, passing
on clean and drifted sample data), corruption caught and named (expectation, column and observation), the
reports written for a result, Great Expectations kept quiet and out of the working directory, and malformed
suite files refused at load. The task around it (files, MLflow, the KFP wrapper) is in
test_run_validation.py."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from components.data_validation.suite_validation import (
    DEFAULT_SUITE_PATH,
    DataValidationResult,
    Suite,
    SuiteError,
    ValidationFailed,
    load_suite,
    validate,
    write_reports,
)
from mlops.data.sample_data import CATEGORIES, SAMPLE_SCHEMA, SampleDataConfig, generate
from tests.components.data_validation.validation_files import _parse_html, _suite_file


@pytest.fixture(scope="module")
def suite() -> Suite:
    return load_suite(DEFAULT_SUITE_PATH)


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
