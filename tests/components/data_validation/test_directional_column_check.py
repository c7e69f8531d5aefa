"""A directional behavioural test naming an unknown column is refused at validate-data, before any training,
whether it comes from the settings or from a schema file (a planted fault)."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.data_validation.config import DataValidationSettings
from components.data_validation.declaration import resolve
from mlops.data.behaviour import DirectionalTest, InvarianceTest
from mlops.data.dataset import DatasetError, DatasetSchema
from mlops.data.schema_file import SchemaFile

USER = DatasetSchema(label="y", numeric_features=("age", "income"), categorical_features=("plan",))
UNKNOWN = DirectionalTest(feature="incme", delta=1000.0, expectation="non_increasing")


def test_directional_test_on_an_unknown_column_from_the_settings_is_refused_naming_it() -> None:
    settings = DataValidationSettings(expectation_suite="/s.json")
    with pytest.raises(DatasetError) as refused:
        resolve(USER, settings, False, (InvarianceTest(feature="age"),), (UNKNOWN,))
    message = str(refused.value)
    assert (
        "directional:incme:+1000:non_increasing names column 'incme', which is not a model feature" in message
    )
    assert "invariance:age" not in message  # the valid test is not blamed
    assert "Model features: ['age', 'income', 'plan']" in message and "nothing was trained" in message


def test_directional_test_on_an_unknown_column_in_a_schema_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "d.schema.yaml"
    path.write_text(
        SchemaFile(
            label="y",
            numeric_features=("age", "income"),
            expectation_suite="d.suite.json",
            directional=(UNKNOWN,),
        ).to_yaml()
    )
    with pytest.raises(DatasetError, match=rf"\(schema file {path}\) cannot run: directional:incme"):
        resolve(USER, DataValidationSettings(schema_uri=str(path)), sample=False)


def test_directional_test_on_a_known_numeric_column_passes() -> None:
    given = DirectionalTest(feature="income", delta=1000.0, expectation="non_increasing")
    declared = resolve(USER, DataValidationSettings(expectation_suite="/s.json"), False, (), (given,))
    assert declared.directional == (given,)
