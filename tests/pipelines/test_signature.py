"""Every pipeline parameter is a config setting: same name, same default, same description."""

from __future__ import annotations

import pytest
import yaml

from mlops.settings import flat, iter_settings
from pipelines.catalog import compiled_path, pipelines
from pipelines.monitoring.pipeline import DEFAULTS as MONITORING_DEFAULTS
from pipelines.signature import packable
from pipelines.training.pipeline import DEFAULTS as TRAINING_DEFAULTS
from pipelines.tuning.pipeline import DEFAULTS as TUNING_DEFAULTS

DEFAULTS = {"training": TRAINING_DEFAULTS, "tuning": TUNING_DEFAULTS, "monitoring": MONITORING_DEFAULTS}


@pytest.mark.parametrize("name", sorted(pipelines()))
def test_parameters_are_exactly_the_configs_settings(name: str) -> None:
    spec = yaml.safe_load(compiled_path(name).read_text())
    parameters = spec["root"]["inputDefinitions"]["parameters"]
    configs = {type(instance): flat(instance) for instance in DEFAULTS[name]}
    settings = list(iter_settings(*configs))
    assert sorted(parameters) == sorted(leaf.name for _, leaf in settings)
    for config, leaf in settings:
        compiled = parameters[leaf.name]
        assert compiled["description"] == leaf.description, (
            f"{name}.{leaf.name}: description differs from {config.__name__}"
        )
        assert compiled.get("defaultValue") == configs[config][leaf.name], (
            f"{name}.{leaf.name}: default differs"
        )


@pytest.mark.parametrize("name", sorted(pipelines()))
def test_defaults_differ_from_the_configs_own_only_where_the_pipeline_says_so(name: str) -> None:
    """A pipeline may set a default of its own only through the config instance it lists."""
    for instance in DEFAULTS[name]:
        own = flat(type(instance)()) if _constructible(type(instance)) else None
        if own is None:
            continue
        changed = {k for k, v in flat(instance).items() if own[k] != v}
        allowed = {
            "training": {"experiment"},
            "tuning": {"experiment", "tune_trials"},
            "monitoring": {"experiment"},
        }[name]
        assert changed <= allowed, f"{name}: {type(instance).__name__} overrides {changed - allowed}"


def _constructible(config: type) -> bool:
    try:
        config()
    except Exception:  # a config with required settings (the schema) has no defaults of its own
        return False
    return True


def test_structured_settings_travel_as_their_own_arguments() -> None:
    """Lists of strings and dicts cannot ride inside a dict argument (KFP substitutes raw text)."""
    packed = {leaf.name for _, leaf in iter_settings(*(type(i) for i in TRAINING_DEFAULTS)) if packable(leaf)}
    assert {"epochs", "hidden_units", "auc_floor", "tracking_uri"} <= packed
    assert not {"numeric_features", "invariance", "directional", "tune_search_space"} & packed
