import pytest

from cli.parameters import ParameterError, merged_arguments, parse_overrides
from pipelines.training.pipeline import training_pipeline


def test_overrides_are_typed_from_the_pipeline_signature() -> None:
    values = parse_overrides(
        training_pipeline,
        ["epochs=3", "learning_rate=0.01", "hidden_units=32,16", "numeric_features=a,b", "model_name=x"],
    )
    assert values == {
        "epochs": 3,
        "learning_rate": 0.01,
        "hidden_units": [32, 16],
        "numeric_features": ["a", "b"],
        "model_name": "x",
    }
    assert parse_overrides(training_pipeline, ["hidden_units=[8]"]) == {"hidden_units": [8]}


def test_unknown_parameter_is_named_with_a_suggestion() -> None:
    with pytest.raises(ParameterError, match=r"unknown parameter 'epoch'; did you mean 'epochs'"):
        parse_overrides(training_pipeline, ["epoch=3"])


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        ("epochs=three", r"--set epochs='three': expected integer"),
        ("auc_floor=high", r"--set auc_floor='high': expected float"),
        ("hidden_units=a,b", r"--set hidden_units='a,b': expected list"),
        ("epochs", r"'epochs' is not key=value"),
    ],
)
def test_mistyped_values_are_rejected(assignment: str, message: str) -> None:
    with pytest.raises(ParameterError, match=message):
        parse_overrides(training_pipeline, [assignment])


def test_overrides_win_over_cli_defaults() -> None:
    merged = merged_arguments(training_pipeline, {"epochs": 5, "data_uri": "x"}, {"epochs": 2})
    assert merged == {"epochs": 2, "data_uri": "x"}
    with pytest.raises(ParameterError, match="no parameter"):
        merged_arguments(training_pipeline, {"nope": 1}, {})
