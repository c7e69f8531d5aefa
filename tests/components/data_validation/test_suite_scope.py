"""The suite follows the schema file; the data's unknown columns are named; failures name offending values."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from components.data_validation.check_results import ValidationFailed
from components.data_validation.column_findings import repeated_names
from components.data_validation.data_profile import Profile, profile
from components.data_validation.data_report import render_html, render_json
from components.data_validation.suite_validation import validate
from mlops.data.dataset import DatasetSchema, parse_table
from mlops.data.schema_file import SchemaFile, parse_schema_file
from tests.support.bank_marketing import LABEL, LEAK, bank_csv


@pytest.fixture(scope="module")
def bank() -> tuple[pd.DataFrame, Profile]:
    data = bank_csv(rows=800)
    frame = parse_table(data, "bank.csv")
    found = profile(
        frame, LABEL, name="bank", protected=("age",), favourable="positive", repeated=repeated_names(data)
    )
    return frame, found


def _edited(found: Profile, **changes: object) -> DatasetSchema:
    """The schema file as the user edits it: its YAML changed and read back."""
    document = found.schema.model_dump(mode="json")
    document.update(changes)
    import yaml

    return parse_schema_file(yaml.safe_dump(document), "bank.schema.yaml").dataset_schema


def test_a_column_moved_to_ignored_columns_needs_no_suite_edit(bank: tuple[pd.DataFrame, Profile]) -> None:
    frame, found = bank
    schema = found.schema
    edited = _edited(
        found,
        numeric_features=[c for c in schema.numeric_features if c != LEAK],
        categorical_features=[c for c in schema.categorical_features if c != "housing"],
        ignored_columns=[*schema.ignored_columns, LEAK, "housing"],
    )
    result = validate(frame, edited, found.suite)
    assert result.success, [c.describe() for c in result.failed]
    assert not any(c.column in (LEAK, "housing") for c in result.checks)  # no false "does not exist"
    # 4 on the numeric duration (presence, nulls, type, range), 3 on housing (presence, nulls, set)
    (note,) = result.notes
    assert "the suite follows the schema file: skipped 7 expectation(s)" in note
    assert f"['{LEAK}', 'housing'] are in the schema file's ignored_columns" in note
    assert "mlops data init ... --force" in note


def test_a_column_moved_between_roles_and_a_newly_declared_one_are_named(
    bank: tuple[pd.DataFrame, Profile],
) -> None:
    frame, found = bank
    schema = found.schema
    edited = _edited(
        found,
        numeric_features=[*schema.numeric_features, "campaign.1"],
        ignored_columns=[c for c in schema.ignored_columns if c != "campaign.1"],
    )
    result = validate(frame, edited, found.suite)
    assert result.success, [c.describe() for c in result.failed]
    assert result.notes == ("no expectation of suite 'bank' checks declared column(s) ['campaign.1']; "
                            "regenerate the suite with `mlops data init ... --force` (or edit it) to silence "
                            "this note",)  # fmt: skip


def test_a_column_the_schema_does_not_know_is_named_not_dropped_silently(
    bank: tuple[pd.DataFrame, Profile],
) -> None:
    frame, found = bank
    result = validate(frame.assign(region="north"), found.schema.dataset_schema, found.suite)
    assert result.success
    (note,) = result.notes
    assert note.startswith("column(s) ['region'] are in the data but not in the schema file: dropped")
    assert "or in ignored_columns" in note
    html, document = render_html(result), json.loads(render_json(result))
    assert "<h2>Notes</h2>" in html and "column(s) [&#39;region&#39;] are in the data" in html
    assert document["notes"] == [note] and document["success"] is True
    assert "<h2>Notes</h2>" not in render_html(validate(frame, found.schema.dataset_schema, found.suite))


def test_a_broken_column_adds_no_false_label_failures(bank: tuple[pd.DataFrame, Profile]) -> None:
    frame, found = bank
    result = validate(frame.drop(columns=["marital"]), found.schema.dataset_schema, found.suite)
    failed = {(c.expectation, c.column) for c in result.failed}
    assert ("dataset_schema", None) in failed
    assert ("expect_column_to_exist", "marital") in failed
    assert not any(column == LABEL for _, column in failed)  # the label was still encoded 0/1


def test_text_in_a_numeric_column_names_the_offending_values_and_their_true_share(
    bank: tuple[pd.DataFrame, Profile],
) -> None:
    frame, found = bank
    broken = frame.assign(campaign=frame["campaign"].astype(object))
    broken.loc[:11, "campaign"] = "n/a?"
    result = validate(broken, found.schema.dataset_schema, found.suite)
    message = str(ValidationFailed(result))
    # The values that broke it and their share, never a sample of valid values.
    assert (
        "column 'campaign' must be numeric but has dtype object: 12 of 800 cells (1.50%) are not numbers ('n/a?' ×12)"
        in message
    )
    (type_check,) = [c for c in result.failed if c.expectation == "expect_column_values_to_be_in_type_list"]
    assert "12 of 800 cells (1.50%) are not numbers: 'n/a?' ×12" in type_check.observed_text
    assert not any(c.column == LABEL for c in result.failed)


def test_a_suite_with_nothing_left_for_the_schema_is_refused() -> None:
    from components.data_validation.suite import Suite, SuiteError

    suite = Suite.model_validate(
        {
            "name": "s",
            "version": "1.0.0",
            "expectations": [{"type": "expect_column_to_exist", "kwargs": {"column": "gone"}}],
        }
    )
    schema = SchemaFile(label="y", numeric_features=("a",)).dataset_schema
    frame = pd.DataFrame({"a": [1.0, 2.0], "y": [0, 1]})
    with pytest.raises(SuiteError, match="no expectation on a column the schema file declares"):
        validate(frame, schema, suite)


def test_a_numeric_protected_attribute_with_markers_is_read_as_numbers_as_data_init_read_it() -> None:
    frame = pd.DataFrame(
        {"age": [str(20 + i % 50) for i in range(300)], "x": [float(i % 7) for i in range(300)],
         "y": ["yes", "no", "no"] * 100}
    )  # fmt: skip
    frame.loc[:5, "age"] = "?"
    found = profile(frame, "y", name="t", protected=("age",), favourable="positive")
    assert ("expect_column_values_to_be_between", "age") in {
        (s.type, s.column) for s in found.suite.expectations
    }
    result = validate(frame, found.schema.dataset_schema, found.suite)
    assert result.success, [c.describe() for c in result.failed]
