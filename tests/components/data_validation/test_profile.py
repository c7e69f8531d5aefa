"""The profiler behind `mlops data init`: column roles, markers, labels, and a suite the data passes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from components.data_validation.data_profile import detect_missing_markers, positive_value, profile
from components.data_validation.suite_validation import validate
from mlops.data.dataset import DatasetError
from mlops.data.schema_file import SchemaFile, parse_schema_file


def table(rows: int = 400, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "customer_id": np.arange(1000, 1000 + rows),
            "email": [f"user{i}@example.com" for i in range(rows)],
            "tenure": rng.integers(0, 72, rows),
            "spend": rng.gamma(2.0, 30.0, rows).round(2),
            "plan": rng.choice(["basic", "plus", "pro"], rows).astype(object),
            "country": ["NL"] * rows,
            "gender": rng.choice(["f", "m"], rows),
            "churned": rng.choice(["yes", "no"], rows, p=[0.3, 0.7]),
        }
    )
    frame.loc[:9, "plan"] = "N/A"
    frame["tenure"] = frame["tenure"].astype(object)
    frame.loc[10:14, "tenure"] = "?"
    return frame


def test_roles_markers_and_label_are_detected() -> None:
    found = profile(table(), "churned", name="churn", protected=("gender",))
    schema = found.schema
    assert schema.positive_label == "yes" and schema.negative_label == "no"  # obvious without --positive
    assert schema.numeric_features == ("tenure", "spend")  # "?" did not turn tenure into text
    assert schema.categorical_features == ("plan",)
    assert schema.ignored_columns == ("customer_id", "email", "country")
    assert schema.protected_attributes == ("gender",)
    assert schema.missing_values == ("?", "N/A")
    assert any("customer_id: ignored, unique per row" in note for note in found.notes)
    assert any("country: ignored, a single value" in note for note in found.notes)


def test_the_proposed_suite_passes_on_its_data_and_catches_a_shift() -> None:
    frame = table()
    found = profile(frame, "churned", name="churn", protected=("gender",))
    types = {spec.type for spec in found.suite.expectations}
    assert {
        "expect_table_row_count_to_be_between",
        "expect_column_values_to_not_be_null",
        "expect_column_values_to_be_between",
        "expect_column_values_to_be_in_set",
        "expect_column_mean_to_be_between",
    } <= types
    assert validate(frame, found.schema.dataset_schema, found.suite).success

    shifted = frame.assign(spend=frame["spend"] * 10, plan=frame["plan"].replace("pro", "enterprise"))
    failed = {
        (c.expectation, c.column) for c in validate(shifted, found.schema.dataset_schema, found.suite).failed
    }
    assert failed == {
        ("expect_column_values_to_be_between", "spend"),
        ("expect_column_values_to_be_in_set", "plan"),
    }
    rebalanced = frame.assign(churned="yes")
    failed = {
        (c.expectation, c.column)
        for c in validate(rebalanced, found.schema.dataset_schema, found.suite).failed
    }
    assert ("expect_column_mean_to_be_between", "churned") in failed


def test_markers_are_whole_stripped_cells_in_text_columns() -> None:
    frame = pd.DataFrame({"a": [" ?", "x", "?x"], "b": [1.0, np.nan, 2.0], "c": ["NULL", "y", "z"]})
    assert detect_missing_markers(frame) == ("?", "NULL")


@pytest.mark.parametrize(
    ("values", "given", "expected"),
    [
        (["0", "1"], None, ("1", "0")),
        (["No", "Yes"], None, ("Yes", "No")),
        (["<=50K", ">50K"], ">50K", (">50K", "<=50K")),
        (["False", "True"], None, ("True", "False")),
    ],
)
def test_positive_value(values: list[str], given: str | None, expected: tuple[str, str]) -> None:
    assert positive_value(values, given, "y") == expected


def test_label_errors_say_how_to_fix_them() -> None:
    with pytest.raises(
        DatasetError, match=r"values \['<=50K', '>50K'\]; say which one is the positive class with --positive"
    ):
        positive_value(["<=50K", ">50K"], None, "income")
    with pytest.raises(DatasetError, match=r"--positive 'high' is not a value of label 'income'"):
        positive_value(["<=50K", ">50K"], "high", "income")
    with pytest.raises(
        DatasetError, match=r"label 'grade' has 3 distinct value\(s\) \['a', 'b', 'c'\]; a binary"
    ):
        positive_value(["a", "b", "c"], None, "grade")
    with pytest.raises(DatasetError, match=r"column\(s\) \['sexx'\] not in the data"):
        profile(table(), "churned", name="x", protected=("sexx",))


def test_schema_file_round_trips_through_yaml() -> None:
    found = profile(
        table(), "churned", name="churn", protected=("gender",), favourable="negative", suite_file="s.json"
    )
    text = found.schema.to_yaml("made by a test\nsecond line")
    assert text.startswith("# made by a test\n# second line\n")
    assert parse_schema_file(text, "churn.schema.yaml") == found.schema
    edited = text.replace("invariance: []", "invariance:\n- feature: plan\n  perturbation: permute")
    assert parse_schema_file(edited, "x.yaml").invariance[0].feature == "plan"


def test_schema_file_errors_name_the_field() -> None:
    with pytest.raises(
        DatasetError, match=r"schema file bad.yaml is invalid: favourable_class: Input should be"
    ):
        parse_schema_file("label: y\nnumeric_features: [a]\nfavourable_class: approve\n", "bad.yaml")
    with pytest.raises(
        DatasetError, match=r"x.yaml is invalid: .*positive_label and negative_label are both 'a'"
    ):
        parse_schema_file("label: y\nnumeric_features: [a]\npositive_label: a\nnegative_label: a\n", "x.yaml")
    with pytest.raises(DatasetError, match="must be a mapping"):
        parse_schema_file("- a\n", "list.yaml")


@pytest.mark.parametrize(
    ("schema_uri", "suite", "expected"),
    [
        ("/data/census.schema.yaml", "census.suite.json", "/data/census.suite.json"),
        ("s3://bucket/decl/census.schema.yaml", "census.suite.json", "s3://bucket/decl/census.suite.json"),
        ("/data/census.schema.yaml", "s3://other/suite.json", "s3://other/suite.json"),
        ("/data/census.schema.yaml", "/abs/suite.json", "/abs/suite.json"),
        ("census.schema.yaml", "census.suite.json", "./census.suite.json"),
    ],
)
def test_suite_path_is_relative_to_the_schema_file(schema_uri: str, suite: str, expected: str) -> None:
    declared = SchemaFile(label="y", numeric_features=("a",), expectation_suite=suite)
    assert declared.suite_uri(schema_uri) == expected
