"""Which declaration applies: the sample's only to the sample; a schema file's to user data."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.data_validation.config import DataValidationSettings
from components.data_validation.declaration import resolve
from components.data_validation.suite import DEFAULT_SUITE_PATH
from mlops.data.behaviour import DirectionalTest, InvarianceTest
from mlops.data.dataset import DatasetError, DatasetSchema
from mlops.data.sample_data import SAMPLE_DIRECTIONAL_TESTS, SAMPLE_INVARIANCE_TESTS, SAMPLE_SCHEMA
from mlops.data.schema_file import SchemaFile

USER = DatasetSchema(label="y", numeric_features=("age",), categorical_features=("plan",))


def test_the_sample_gets_the_built_in_suite_and_tests() -> None:
    declared = resolve(SAMPLE_SCHEMA, DataValidationSettings(), sample=True)
    assert declared.suite_uri == str(DEFAULT_SUITE_PATH)
    assert declared.invariance == SAMPLE_INVARIANCE_TESTS
    assert declared.directional == SAMPLE_DIRECTIONAL_TESTS


def test_user_data_without_a_declaration_is_refused_with_the_fix() -> None:
    with pytest.raises(
        DatasetError, match=r"user data needs its own declaration.*mlops data init --data FILE"
    ):
        resolve(USER, DataValidationSettings(), sample=False)


def test_user_data_with_only_a_suite_runs_no_sample_tests() -> None:
    declared = resolve(USER, DataValidationSettings(expectation_suite="/s.json"), sample=False)
    assert declared.suite_uri == "/s.json"
    assert declared.invariance == () and declared.directional == ()


def test_a_schema_file_replaces_the_parameters_and_names_its_suite(tmp_path: Path) -> None:
    path = tmp_path / "d.schema.yaml"
    declared_file = SchemaFile(
        label="income",
        positive_label=">50K",
        negative_label="<=50K",
        numeric_features=("age",),
        expectation_suite="d.suite.json",
        invariance=(InvarianceTest(feature="age"),),
    )
    path.write_text(declared_file.to_yaml())
    declared = resolve(SAMPLE_SCHEMA, DataValidationSettings(schema_uri=str(path)), sample=False)
    assert declared.schema == declared_file.dataset_schema
    assert declared.suite_uri == f"{tmp_path}/d.suite.json"
    assert declared.invariance == (InvarianceTest(feature="age"),)
    # Tests given as settings replace the declared ones.
    given = DirectionalTest(feature="age", delta=1.0, expectation="non_decreasing")
    replaced = resolve(SAMPLE_SCHEMA, DataValidationSettings(schema_uri=str(path)), False, (), (given,))
    assert replaced.invariance == () and replaced.directional == (given,)


def test_a_test_naming_an_unknown_or_categorical_column_fails_naming_it() -> None:
    settings = DataValidationSettings(expectation_suite="/s.json")
    with pytest.raises(
        DatasetError, match=r"invariance:zip_code:permute names column 'zip_code', which is not a model"
    ):
        resolve(USER, settings, False, (InvarianceTest(feature="zip_code"),))
    with pytest.raises(
        DatasetError, match=r"names column 'plan', which is categorical; directional tests need"
    ):
        resolve(
            USER,
            settings,
            False,
            (),
            (DirectionalTest(feature="plan", delta=1.0, expectation="non_decreasing"),),
        )
    # The sample's own tests name sample columns: on other data they are never applied, so never fail.
    assert resolve(USER, settings, sample=False).invariance == ()


def test_a_schema_files_reason_texts_travel_in_the_declaration_and_parameters_carry_none(
    tmp_path: Path,
) -> None:
    path = tmp_path / "d.schema.yaml"
    declared_file = SchemaFile(
        label="income",
        numeric_features=("age", "hours"),
        expectation_suite="d.suite.json",
        reasons={"age": "Age of the applicant"},
    )
    path.write_text(declared_file.to_yaml())
    declared = resolve(SAMPLE_SCHEMA, DataValidationSettings(schema_uri=str(path)), sample=False)
    assert declared.reasons == {"age": "Age of the applicant"}
    from_parameters = resolve(
        SAMPLE_SCHEMA, DataValidationSettings(expectation_suite="/s.json"), sample=False
    )
    assert from_parameters.reasons == {}
