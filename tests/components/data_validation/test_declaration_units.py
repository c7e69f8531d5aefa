"""The run's declaration, pinned whole: its source in words, every refusal's text, the behavioural
tests' metadata, and the settings' whitespace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.data_validation.config import DataValidationSettings
from components.data_validation.declaration import Declaration, resolve
from components.data_validation.suite import DEFAULT_SUITE_PATH
from mlops.data.behaviour import DirectionalTest, InvarianceTest
from mlops.data.dataset import DatasetError, DatasetSchema
from mlops.data.sample_data import SAMPLE_SCHEMA
from mlops.data.schema_file import SchemaFile

USER = DatasetSchema(label="y", numeric_features=("age", "income"), categorical_features=("plan",))
SHIFT = InvarianceTest(feature="age", perturbation="shift", shift=2.0)
UP = DirectionalTest(feature="income", delta=1000.0, expectation="non_decreasing")


def schema_file(tmp_path: Path, suite: str = "d.suite.json") -> Path:
    path = tmp_path / "d.schema.yaml"
    path.write_text(
        SchemaFile(
            label="y",
            numeric_features=("age", "income"),
            categorical_features=("plan",),
            expectation_suite=suite,
            invariance=(SHIFT,),
        ).to_yaml()
    )
    return path


def test_the_behavioural_metadata_lists_each_kind_of_test_as_json() -> None:
    declared = Declaration(USER, "/s.json", (SHIFT,), (UP,), "pipeline parameters")
    metadata = declared.behavioural_metadata()
    assert metadata == {
        "invariance": [
            {
                "feature": "age",
                "perturbation": "shift",
                "shift": 2.0,
                "max_mean_abs_change": 0.03,
                "max_abs_change": 0.2,
            }
        ],
        "directional": [
            {
                "feature": "income",
                "delta": 1000.0,
                "expectation": "non_decreasing",
                "tolerance": 0.01,
                "min_pass_fraction": 0.95,
            }
        ],
    }
    assert json.loads(json.dumps(metadata)) == metadata
    assert Declaration(USER, "/s.json", (), (), "x").behavioural_metadata() == {
        "invariance": [],
        "directional": [],
    }


def test_every_bad_column_is_named_in_one_refusal_with_the_source_and_the_features() -> None:
    declared = Declaration(
        USER,
        "/s.json",
        (InvarianceTest(feature="zip"), InvarianceTest(feature="plan")),
        (DirectionalTest(feature="plan", delta=1.0, expectation="non_increasing"), UP),
        "pipeline parameters",
    )
    with pytest.raises(DatasetError) as caught:
        declared.check_columns()
    assert str(caught.value) == (
        "behavioural tests (pipeline parameters) cannot run: invariance:zip:permute names column 'zip', which is "
        "not a model feature; directional:plan:+1:non_increasing names column 'plan', which is categorical; "
        "directional tests need a numeric feature. Model features: ['age', 'income', 'plan']. Fix the test "
        "(schema file or --invariance/--directional); nothing was trained."
    )


@pytest.mark.parametrize(
    ("schema", "sample", "suite", "source"),
    [(SAMPLE_SCHEMA, True, "", "the built-in sample"), (USER, False, "/s.json", "pipeline parameters")],
)
def test_the_source_of_the_parameters_is_named(schema, sample, suite, source) -> None:
    declared = resolve(schema, DataValidationSettings(expectation_suite=suite), sample)
    assert declared.source == source
    # The sample's schema only gains the column it acknowledges (below); everything else is as given.
    assert declared.schema == schema.model_copy(update={"allowed_leaks": declared.schema.allowed_leaks})
    assert declared.schema.allowed_leaks == (("credit_score",) if sample else ())


def test_the_sample_keeps_a_suite_given_for_it(tmp_path) -> None:
    declared = resolve(SAMPLE_SCHEMA, DataValidationSettings(expectation_suite="  /mine.json "), sample=True)
    assert declared.suite_uri == "/mine.json"
    assert resolve(
        SAMPLE_SCHEMA, DataValidationSettings(expectation_suite=" "), sample=True
    ).suite_uri == str(DEFAULT_SUITE_PATH)


def test_tests_given_as_settings_replace_the_declared_ones_and_say_so(tmp_path) -> None:
    path = schema_file(tmp_path)
    declared = resolve(SAMPLE_SCHEMA, DataValidationSettings(schema_uri=str(path)), False)
    assert (declared.source, declared.invariance, declared.directional) == (
        f"schema file {path}",
        (SHIFT,),
        (),
    )
    replaced = resolve(SAMPLE_SCHEMA, DataValidationSettings(schema_uri=str(path)), False, (), (UP,))
    assert (replaced.source, replaced.invariance, replaced.directional) == (
        "the invariance/directional settings",
        (),
        (UP,),
    )
    sample = resolve(SAMPLE_SCHEMA, DataValidationSettings(), True, (InvarianceTest(feature="income"),))
    assert sample.source == "the invariance/directional settings" and sample.directional == ()


def test_a_schema_uri_and_a_suite_are_read_without_surrounding_spaces(tmp_path) -> None:
    path = schema_file(tmp_path)
    declared = resolve(
        USER, DataValidationSettings(schema_uri=f"  {path}\n", expectation_suite=" /given.json "), False
    )
    assert declared.suite_uri == "/given.json"  # a given suite wins over the file's
    assert declared.source == f"schema file {path}"


def test_a_schema_file_without_a_suite_and_none_given_is_refused_whole(tmp_path) -> None:
    path = schema_file(tmp_path, suite="")
    with pytest.raises(DatasetError) as caught:
        resolve(USER, DataValidationSettings(schema_uri=str(path)), False)
    assert str(caught.value) == (
        f"schema file {path} names no expectation_suite and none was given; add the suite path to the file or "
        "pass --validation.expectation_suite FILE"
    )


def test_user_data_without_a_declaration_is_refused_whole() -> None:
    with pytest.raises(DatasetError) as caught:
        resolve(USER, DataValidationSettings(expectation_suite="  "), sample=False)
    assert str(caught.value) == (
        "user data needs its own declaration: the built-in suite describes only the sample. Run "
        "`mlops data init --data FILE --label COLUMN` and pass --schema FILE (or --validation.expectation_suite "
        "FILE)"
    )


def test_the_sample_acknowledges_its_credit_score_and_nothing_else_does(tmp_path) -> None:
    """The sample's label is drawn mostly from its credit score (known at application time): its declaration
    allows that one column, as its behavioural tests apply, and user data or a schema file never gets it."""
    sample = resolve(SAMPLE_SCHEMA, DataValidationSettings(), sample=True).schema
    assert sample.allowed_leaks == ("credit_score",)
    assert SAMPLE_SCHEMA.allowed_leaks == ()  # the pipeline's defaults are not the sample's facts
    given = SAMPLE_SCHEMA.model_copy(update={"allowed_leaks": ("income", "credit_score")})
    assert resolve(given, DataValidationSettings(), sample=True).schema.allowed_leaks == (
        "income",
        "credit_score",
    )
    without = DatasetSchema(
        label="default",
        numeric_features=tuple(c for c in SAMPLE_SCHEMA.numeric_features if c != "credit_score"),
        categorical_features=SAMPLE_SCHEMA.categorical_features,
    )
    # The sample's own behavioural tests need the column: one that does not replaces them.
    region = InvarianceTest(feature="region", perturbation="permute")
    assert resolve(without, DataValidationSettings(), True, (region,)).schema.allowed_leaks == ()
    user = resolve(SAMPLE_SCHEMA, DataValidationSettings(expectation_suite="/s.json"), sample=False).schema
    assert user.allowed_leaks == ()
    declared = resolve(SAMPLE_SCHEMA, DataValidationSettings(schema_uri=str(schema_file(tmp_path))), False)
    assert declared.schema.allowed_leaks == ()
