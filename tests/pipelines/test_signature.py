"""Every pipeline parameter comes from the configs: per-run settings as plain parameters, every other
setting inside its section's dict, each with its name, default and description; and every setting
reaches a task."""

import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar, get_args, get_origin

import pytest
import yaml
from kfp import compiler, dsl
from pydantic import BaseModel, ConfigDict, Field

from mlops.settings import (
    SettingsError,
    addressed,
    from_addressed,
    section_of,
    section_values,
    settings_of,
)
from pipelines.catalog import compiled_path, forms, pipelines
from pipelines.signature import FormSetting, PipelineForm, pipeline_type, settings_pipeline
from training.config import TrainConfig

FORMS = forms()
TRAINING_FORM_LIMIT = 20
"""The issue's bound: a person fills the training form in the KFP UI."""


def _compiled(name: str) -> dict[str, Any]:
    return next(yaml.safe_load_all(compiled_path(name).read_text()))  # the spec; the platform spec follows


class _Row(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    key: int = Field(default=1, description="A key.")


class _Widths(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    widths: tuple[int, ...] = Field(default=(8, 4), description="Layer widths.")
    rate: float = Field(default=0.1, description="A rate.")
    rows: tuple[_Row, ...] = Field(default=(), description="Models in a list.")


class _Kinds(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    section: ClassVar[str] = "kinds"

    epochs: int = Field(default=3, description="Epochs.")
    name: str = Field(default="x", description="A name.")
    mode: typing.Literal["a", "b"] = Field(default="a", description="A mode.")
    level: typing.Literal[1, 2] = Field(default=1, description="A numeric choice.")
    flag: bool = Field(default=False, description="A flag.")
    inner: _Widths = Field(default_factory=_Widths, description="Nested.")
    extra: dict[str, int] = Field(default_factory=dict, description="A mapping.")


def test_pipeline_types_are_the_ones_kfp_accepts() -> None:
    types = {s.address: str(pipeline_type(s)) for s in settings_of(_Kinds)}
    assert types == {
        "kinds.epochs": "<class 'int'>",
        "kinds.name": "<class 'str'>",
        "kinds.mode": "<class 'str'>",
        "kinds.level": "<class 'int'>",
        "kinds.flag": "<class 'bool'>",
        "kinds.inner.widths": "typing.List[int]",  # KFP's signature parser needs typing.List
        "kinds.inner.rate": "<class 'float'>",
        "kinds.inner.rows": "typing.List[dict]",
        "kinds.extra": "<class 'dict'>",
    }

    class Odd(BaseModel):
        section: ClassVar[str] = "odd"
        when: complex = Field(default=1j, description="Not a KFP type.")
        mixed: typing.Literal["a", 1] = Field(default="a", description="Two kinds of choice.")

    odd = settings_of(Odd)
    with pytest.raises(SettingsError, match=r"setting 'odd.when' has type <class 'complex'>"):
        pipeline_type(odd[0])
    with pytest.raises(SettingsError, match=r"setting 'odd.mixed' has type"):
        pipeline_type(odd[1])


@pytest.mark.parametrize("name", sorted(pipelines()))
def test_parameters_are_the_per_run_settings_and_one_dict_per_section(name: str) -> None:
    form = FORMS[name]
    parameters = _compiled(name)["root"]["inputDefinitions"]["parameters"]
    per_run = [s for s in form.settings if s.per_run]
    assert sorted(parameters) == sorted([s.form_name for s in per_run] + list(form.sections))
    for setting in per_run:
        compiled = parameters[setting.form_name]
        assert compiled["description"] == setting.description, f"{name}.{setting.address}: description"
        assert compiled.get("defaultValue") == setting.default, f"{name}.{setting.address}: default"
    for instance in form.defaults:
        section = section_of(type(instance))
        if section not in form.sections:
            continue
        compiled = parameters[section]
        assert compiled["parameterType"] == "STRUCT"
        per_run_here = {s.address for s in per_run if s.section == section}
        assert compiled["defaultValue"] == section_values(instance, exclude=per_run_here)
        lines = compiled["description"].splitlines()[1:]
        inside = [s for s in form.settings if s.section == section and not s.per_run]
        assert [line.split(":")[0] for line in lines] == [s.address for s in inside], f"{name}.{section}"
        for line, setting in zip(lines, inside, strict=True):
            assert setting.description in line, f"{name}.{setting.address}: description missing from the form"


@pytest.mark.parametrize("name", sorted(pipelines()))
def test_each_section_dict_carries_every_setting_that_is_not_per_run(name: str) -> None:
    form = FORMS[name]
    parameters = _compiled(name)["root"]["inputDefinitions"]["parameters"]
    for setting in form.settings:
        if setting.per_run:
            continue
        value: Any = parameters[setting.section]["defaultValue"]
        for part in setting.path:
            assert part in value, f"{name}: {setting.address} is missing from the {setting.section!r} dict"
            value = value[part]
        assert value == setting.default, f"{name}: {setting.address} default differs in the form"


def test_the_training_form_is_short_enough_to_fill() -> None:
    parameters = _compiled("training")["root"]["inputDefinitions"]["parameters"]
    assert len(parameters) <= TRAINING_FORM_LIMIT, sorted(parameters)
    assert {"data_uri", "tune_trials", "rollout_canary", "registration_model_name"} <= set(parameters)


@pytest.mark.parametrize("name", sorted(pipelines()))
def test_defaults_differ_from_the_configs_own_only_where_the_pipeline_says_so(name: str) -> None:
    """A pipeline may set a default of its own only through the config instance it lists."""
    for instance in FORMS[name].defaults:
        own = addressed(type(instance)()) if _constructible(type(instance)) else None
        if own is None:
            continue
        changed = {k for k, v in addressed(instance).items() if own[k] != v}
        allowed = {
            "training": {"tracking.experiment"},
            "tuning": {"tracking.experiment", "tune.trials"},
            "monitoring": {"tracking.experiment"},
            "batch_scoring": {"tracking.experiment"},
        }[name]
        assert changed <= allowed, f"{name}: {type(instance).__name__} overrides {changed - allowed}"


def _constructible(config: type) -> bool:
    try:
        config()
    except Exception:  # a config with required settings (the schema) has no defaults of its own
        return False
    return True


def test_structured_settings_ride_inside_their_section() -> None:
    """Lists and dicts are never plain parameters: they travel inside the section dict, passed whole."""
    form = FORMS["training"]
    structured = {s.address for s in form.settings if pipeline_type(s) not in (str, int, float, bool)}
    assert {
        "schema.numeric_features",
        "model_validation.behavioural.invariance",
        "tune.search_space",
        "rollout.canary_steps",
        "train.model.hidden_units",
    } <= structured
    assert not any(form.setting(address).per_run for address in structured)
    with pytest.raises(SettingsError, match=r"per-run setting schema.numeric_features has type"):
        PipelineForm("x", "x", form.defaults, per_run=("schema.numeric_features",))


def _consumers(spec: dict[str, Any], dag: dict[str, Any], name: str) -> Iterator[tuple[str, str]]:
    """(task, input) pairs of the container tasks (and conditions) that receive the DAG input ``name``."""
    for task_name, task in dag.get("tasks", {}).items():
        inputs = task.get("inputs", {}).get("parameters", {})
        condition = task.get("triggerPolicy", {}).get("condition", "")
        for input_name, source in inputs.items():
            if source.get("componentInputParameter") != name:
                continue
            component = spec["components"][task["componentRef"]["name"]]
            if "dag" in component:
                if f"'{input_name}'" in condition:
                    yield task_name, "condition"
                yield from _consumers(spec, component["dag"], input_name)
            else:
                yield task_name, input_name


def _resources(spec: dict[str, Any], task_name: str) -> str:
    executors = spec["deploymentSpec"]["executors"]
    return str(executors.get(f"exec-{task_name}", {}).get("container", {}).get("resources", {}))


@pytest.mark.parametrize("name", sorted(pipelines()))
def test_every_parameter_reaches_a_task_under_its_own_name(name: str) -> None:
    """A section dict reaches a task's argument named by the section (which rebuilds its config with
    ``from_section``); a per-run value an argument named by its form name, a pod resource or a condition."""
    spec = _compiled(name)
    for parameter in spec["root"]["inputDefinitions"]["parameters"]:
        consumers = list(_consumers(spec, spec["root"]["dag"], parameter))
        reached = [
            (task, argument)
            for task, argument in consumers
            if argument == parameter
            or argument == "condition"
            or (argument == f"pipelinechannel--{parameter}" and parameter in _resources(spec, task))
        ]
        assert reached, f"{name}: parameter {parameter} reaches no task argument of its name ({consumers})"


def _another_value(form: PipelineForm, setting: FormSetting) -> Any:
    """A valid value of ``setting`` that differs from this pipeline's default."""
    default = setting.default
    annotation = setting.annotation
    candidates: list[Any] = []
    if get_origin(annotation) is typing.Literal:
        candidates += [arg for arg in get_args(annotation) if arg != default]
    if annotation is bool:
        candidates.append(not default)
    elif isinstance(default, int | float) and not isinstance(default, bool):
        candidates += [default + 1, default / 2, default + 0.01, default - 0.01, 0.99, 0.5, 0.05]
    elif isinstance(default, str):
        candidates += [f"{default}1" if default else "a1", "2", "3Gi", "eu-west", "http://server:9000"]
    elif isinstance(default, list):
        candidates += [
            [*default, "extra_column"],
            [10, 100],
            [64],
            [{"feature": "age"}],
            [{"feature": "age", "delta": 1.0, "expectation": "non_decreasing"}],
            [{"columns": ["region"]}],  # schema.slices
            ["val_auc", "fairness_gap"],  # tune.objectives
            ["age"],  # schema.allowed_leaks: features only
        ]
    elif isinstance(default, dict):
        candidates += [{"k": "psi"}, {"k": 2.0}, {"epochs": "5"}, {"roc_auc": 0.6}]  # gate.slice_floors
        candidates.append({"sex": [0.5]})  # schema.protected_bins
    for candidate in candidates:
        if candidate == default:
            continue
        try:
            from_addressed({setting.address: candidate}, form.defaults)
        except (SettingsError, ValueError):
            continue
        return candidate
    raise AssertionError(f"no other valid value found for {setting.address} (default {default!r})")


@pytest.mark.parametrize("name", sorted(pipelines()))
def test_a_setting_changed_on_the_form_reaches_the_argument_a_task_receives(name: str) -> None:
    """For every setting: ``arguments({address: new})`` changes exactly the parameter that carries it
    (its section dict, or its own plain parameter), a task receives that parameter (test above), and
    the task's config (``configs``) holds the new value."""
    form = FORMS[name]
    spec = _compiled(name)
    wired = {
        p
        for p in spec["root"]["inputDefinitions"]["parameters"]
        if list(_consumers(spec, spec["root"]["dag"], p))
    }
    base = form.arguments({})
    for setting in form.settings:
        new = _another_value(form, setting)
        arguments = form.arguments({setting.address: new})
        changed = {key for key in arguments if arguments[key] != base[key]}
        carrier = setting.form_name if setting.per_run else setting.section
        assert changed == {carrier}, f"{name}: {setting.address} changed {changed}, expected {carrier}"
        assert carrier in wired, f"{name}: {setting.address} rides in {carrier}, which no task receives"
        expected = {
            address: value
            for config in from_addressed({setting.address: new}, form.defaults)
            for address, value in addressed(config).items()
        }[setting.address]
        assert expected != setting.default
        assert form.values(arguments)[setting.address] == expected, (
            f"{name}: {setting.address} lost on the way"
        )


def test_a_section_given_whole_replaces_the_default_and_missing_keys_take_the_configs_own() -> None:
    form = FORMS["training"]
    (train,) = [c for c in form.configs({"train": {"epochs": 2}}) if isinstance(c, TrainConfig)]
    assert train == TrainConfig(epochs=2)
    with pytest.raises(SettingsError, match=r"pipeline 'training' has no parameter\(s\) \['epochs'\]"):
        form.configs({"epochs": 2})
    with pytest.raises(
        SettingsError,
        match=r"unknown setting 'train.epoch' of pipeline 'training'; did you mean 'train.epochs'",
    ):
        form.arguments({"train.epoch": 2})


def test_a_per_run_setting_is_read_only_as_its_own_parameter() -> None:
    form = FORMS["training"]
    arguments = form.arguments({"data.uri": "s3://bucket/data.csv", "tune.trials": "3"})
    assert arguments["data_uri"] == "s3://bucket/data.csv" and arguments["tune_trials"] == 3
    assert "uri" not in arguments["data"] and "trials" not in arguments["tune"]
    values = form.values(arguments)
    assert values["data.uri"] == "s3://bucket/data.csv" and values["tune.trials"] == 3


def test_a_notebook_composed_pipeline_hands_a_section_to_its_task(tmp_path: Path) -> None:
    """A notebook composes a pipeline from a component and one section (``section_values``); the
    compiled task receives that dict whole, and the component rebuilds the setting from it."""
    from components.tune.component import fixed_train_config

    section = section_values(TrainConfig(epochs=3, learning_rate=0.01))

    @dsl.pipeline(name="composed")
    def composed(train: dict = section) -> None:
        fixed_train_config(train=train)

    path = tmp_path / "composed.yaml"
    compiler.Compiler().compile(composed, str(path))
    spec = yaml.safe_load(path.read_text())
    assert spec["root"]["inputDefinitions"]["parameters"]["train"]["defaultValue"]["learning_rate"] == 0.01
    task = spec["root"]["dag"]["tasks"]["fixed-train-config"]
    assert task["inputs"]["parameters"]["train"] == {"componentInputParameter": "train"}
    # What the task does with it: its Python function, run as the executor would.
    outputs = fixed_train_config.python_func(train={**section, "epochs": "5"})  # a value typed as text
    assert outputs.train_config["epochs"] == 5 and outputs.train_config["learning_rate"] == 0.01


def test_settings_pipeline_builds_the_same_form() -> None:
    form = FORMS["tuning"]

    @settings_pipeline("tuning-copy", form.description, form.defaults, per_run=form.per_run)
    def copy(parameters: Any) -> None:
        fixed_train_config_task(parameters)

    spec = yaml.safe_load(_compile(copy))
    assert sorted(spec["root"]["inputDefinitions"]["parameters"]) == sorted(form.parameter_defaults())


def fixed_train_config_task(parameters: Any) -> None:
    from components.tune.component import fixed_train_config

    fixed_train_config(train=parameters.section("train"))


def _compile(pipeline: Any) -> str:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "p.yaml"
        compiler.Compiler().compile(pipeline, str(path))
        return path.read_text()
