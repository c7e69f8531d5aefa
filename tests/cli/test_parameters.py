"""``--set section.field=value``: typed from the setting's annotation, named by its address, validated by its config."""

import pytest

from cli.parameters import ParameterError, checked_arguments, parse_overrides
from pipelines.training.pipeline import FORM


def test_overrides_are_typed_from_the_settings_annotations() -> None:
    values = parse_overrides(
        FORM,
        [
            "train.epochs=3",
            "train.learning_rate=0.01",
            "train.model.hidden_units=32,16",
            "schema.numeric_features=a,b",
            "registration.model_name=x",
            "train.precision=bf16",
            "train_task.cluster.keep_job=yes",
        ],
    )
    assert values == {
        "train.epochs": 3,
        "train.learning_rate": 0.01,
        "train.model.hidden_units": [32, 16],
        "schema.numeric_features": ["a", "b"],
        "registration.model_name": "x",
        "train.precision": "bf16",
        "train_task.cluster.keep_job": True,
    }
    assert parse_overrides(FORM, ["train.model.hidden_units=[8]"]) == {"train.model.hidden_units": [8]}
    assert parse_overrides(FORM, ["train.epochs=3", "train.epochs=4"]) == {"train.epochs": 4}  # the last wins


@pytest.mark.parametrize(
    ("assignment", "value"),
    [
        ("train.epochs= 3.0 ", 3),
        ("train.epochs=1_0", 10),
        ("gate.auc_floor=7e-1", 0.7),
        ("train_task.cluster.keep_job=ON", True),
        ("train_task.cluster.keep_job=n", False),
        ("train_task.cluster.keep_job=0", False),
    ],
)
def test_values_are_read_by_pydantics_rules_for_text(assignment: str, value: object) -> None:
    """The same text a config takes from the environment or a query string: an integral float is an integer,
    ``on``/``n`` are booleans."""
    address = assignment.split("=")[0]
    (read,) = parse_overrides(FORM, [assignment]).values()
    assert read == value and type(read) is type(value), (address, read)


def test_a_whole_section_or_nested_group_as_json_sets_each_of_its_settings() -> None:
    values = parse_overrides(FORM, ['train={"epochs": 2, "model": {"dropout": 0.2}}', 'tune={"trials": 3}'])
    assert values == {"train.epochs": 2, "train.model.dropout": 0.2, "tune.trials": 3}
    assert parse_overrides(FORM, ['train.model={"embedding_dim": 4}']) == {"train.model.embedding_dim": 4}
    with pytest.raises(ParameterError, match=r"unknown setting 'train.epoch'.*did you mean 'train.epochs'"):
        parse_overrides(FORM, ['train={"epoch": 2}'])
    with pytest.raises(ParameterError, match=r"train is a group of settings; give a JSON object"):
        parse_overrides(FORM, ["train=5x"])


def test_unknown_address_suggests_the_closest_and_lists_the_sections_settings() -> None:
    with pytest.raises(ParameterError) as raised:
        parse_overrides(FORM, ["train.epoch=3"])
    message = str(raised.value)
    assert "unknown setting 'train.epoch' of pipeline 'training'; did you mean 'train.epochs'?" in message
    assert "train's settings: train.epochs, train.batch_size, train.learning_rate" in message
    assert "train.model.dropout" in message and "tune.trials" not in message


@pytest.mark.parametrize(
    ("name", "suggestion"),
    [
        ("tune_trials", "tune.trials"),  # the pre-sections name: the form name of tune.trials
        ("epochs", "train.epochs"),  # a bare field name
        ("sample_rows", "data.sample.rows"),
        ("trian.epochs", "train.epochs"),  # a misspelt section
    ],
)
def test_old_or_misspelt_names_point_at_the_address(name: str, suggestion: str) -> None:
    with pytest.raises(ParameterError, match=rf"unknown setting '{name}'.*did you mean '{suggestion}'"):
        parse_overrides(FORM, [f"{name}=3"])
    with pytest.raises(ParameterError, match=r"sections: data, schema, validation, train"):
        parse_overrides(FORM, ["nosuch.thing=3"])


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        ("train.epochs=three", r"--set train.epochs='three': expected integer \(e.g. train.epochs=3\)"),
        ("train.epochs=3.5", r"--set train.epochs='3.5': expected integer"),
        ("train.epochs=٣", r"--set train.epochs='٣': expected integer"),
        ("train_task.cluster.keep_job=2", r"--set train_task.cluster.keep_job='2': expected boolean"),
        ("gate.auc_floor=high", r"--set gate.auc_floor='high': expected float"),
        ("train.model.hidden_units=a,b", r"--set train.model.hidden_units='a,b': expected list"),
        ("train.precision=fp8", r"--set train.precision='fp8': expected one of auto, fp32, bf16, fp16"),
        ("tune.search_space=[1]", r"--set tune.search_space='\[1\]': expected JSON object"),
        ("train.epochs", r"'train.epochs' is not section.field=value \(e.g. train.epochs=5\)"),
    ],
)
def test_mistyped_values_are_rejected(assignment: str, message: str) -> None:
    with pytest.raises(ParameterError, match=message):
        parse_overrides(FORM, [assignment])


def test_values_become_the_forms_arguments_and_every_invalid_one_is_listed() -> None:
    arguments = checked_arguments(FORM, {"train.epochs": 2, "data.uri": "x.csv", "tune.trials": 3})
    assert arguments["data_uri"] == "x.csv" and arguments["tune_trials"] == 3  # per-run: plain parameters
    assert arguments["train"]["epochs"] == 2  # the rest: inside the whole section, defaults beside it
    assert arguments["train"]["batch_size"] == FORM.setting("train.batch_size").default
    assert FORM.values(arguments)["train.epochs"] == 2
    with pytest.raises(ParameterError) as raised:
        checked_arguments(FORM, {"train.epochs": 0, "gate.auc_floor": 2.0})
    assert "train.epochs: Input should be greater than or equal to 1 (got 0)" in str(raised.value)
    assert "gate.auc_floor: Input should be less than or equal to 1 (got 2.0)" in str(raised.value)


def test_each_stages_config_is_validated_once_per_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """The values go down once: the command line types them, the form builds the arguments, and the
    settings layer validates each config a single time (not once to list the problems, then again)."""
    from mlops import settings

    validated: list[str] = []
    real = settings._validate

    def counting(config, values, where):  # type: ignore[no-untyped-def]
        validated.append(where)
        return real(config, values, where)

    monkeypatch.setattr(settings, "_validate", counting)
    checked_arguments(FORM, parse_overrides(FORM, ["train.learning_rate=0.01"]))
    sections = [type(instance).section for instance in FORM.defaults]
    assert sorted(validated) == sorted(sections)


def test_a_validators_value_error_reads_without_pydantics_prefix() -> None:
    with pytest.raises(ParameterError) as raised:
        checked_arguments(FORM, {"train.model.hidden_units": [0]})
    assert "train.model.hidden_units: hidden_units must be one or more positive widths" in str(raised.value)
    assert "Value error, " not in str(raised.value)
