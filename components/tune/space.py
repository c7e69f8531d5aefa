"""The hyperparameter search space: a typed config read from a file, checked before any trial starts.

A range that Optuna would only reject mid-study (``low > high``, a log scale
through zero) or a value the training config would reject on the first trial
(``dropout`` 1.5) is caught here, with the parameter named, so a tuning run
never spends a worker's time discovering a typo.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, Field, ValidationError, model_validator

from mlops.settings import SETTINGS_CONFIG
from training.config import TrainConfig

if TYPE_CHECKING:
    import optuna

DEFAULT_SPACE_FILE = Path(__file__).parent / "search_spaces" / "default.yaml"

MODEL_PARAMETERS = ("hidden_units", "dropout")
"""Tunable fields of :class:`training.model.ModelConfig`."""
TRAIN_PARAMETERS = ("epochs", "batch_size", "learning_rate", "weight_decay", "patience")
"""Tunable fields of :class:`training.config.TrainConfig`."""
TUNABLE = TRAIN_PARAMETERS + MODEL_PARAMETERS
"""Exactly the hyperparameters the pipeline's train step takes, so the best trial can be retrained as is."""

Choice = bool | int | float | str | list[int]


class SearchSpaceError(ValueError):
    """The search space is empty, contradictory or names a parameter training does not have."""


class _Range(BaseModel):
    model_config = SETTINGS_CONFIG


class IntRange(_Range):
    """Integers from ``low`` to ``high`` inclusive."""

    type: Literal["int"]
    """Discriminator: an integer range."""
    low: int
    """Smallest value (inclusive)."""
    high: int
    """Largest value (inclusive)."""
    step: int = Field(default=1, ge=1)
    """Spacing of the values; must be 1 with log."""
    log: bool = Field(default=False)
    """Sample on a log scale (needs low >= 1)."""

    @model_validator(mode="after")
    def _consistent(self) -> IntRange:
        _check_bounds(self.low, self.high, self.log)
        if self.log and self.step != 1:
            raise ValueError(f"log-scale int range cannot have step {self.step}; drop step or log")
        return self


class FloatRange(_Range):
    """Real numbers from ``low`` to ``high``."""

    type: Literal["float"]
    """Discriminator: a float range."""
    low: float
    """Smallest value (inclusive)."""
    high: float
    """Largest value (inclusive)."""
    log: bool = Field(default=False)
    """Sample on a log scale (needs low > 0)."""
    step: float | None = Field(default=None, gt=0)
    """Discretisation step; not with log."""

    @model_validator(mode="after")
    def _consistent(self) -> FloatRange:
        _check_bounds(self.low, self.high, self.log)
        if self.log and self.step is not None:
            raise ValueError(f"log-scale float range cannot have step {self.step}; drop step or log")
        return self


class Categorical(_Range):
    """One of a fixed list; list values (``hidden_units``) travel through Optuna as ``"64,32"``."""

    type: Literal["categorical"]
    """Discriminator: a list of choices."""
    choices: list[Choice]
    """The candidate values; at least one, no duplicates."""

    @model_validator(mode="after")
    def _consistent(self) -> Categorical:
        if not self.choices:
            raise ValueError("categorical parameter has no choices; list at least one value")
        encoded = self.optuna_choices()
        if len(set(encoded)) != len(encoded):
            raise ValueError(f"categorical choices {self.choices} contain duplicates")
        return self

    def optuna_choices(self) -> list[bool | int | float | str]:
        return [_encode(choice) for choice in self.choices]

    def decode(self, value: Any) -> Choice:
        return dict(zip(self.optuna_choices(), self.choices, strict=True))[value]


def _encode(choice: Choice) -> bool | int | float | str:
    return ",".join(str(width) for width in choice) if isinstance(choice, list) else choice


def _check_bounds(low: float, high: float, log: bool) -> None:
    if low > high:
        raise ValueError(f"low {low} is greater than high {high}; swap them")
    if log and low <= 0:
        raise ValueError(f"log-scale range needs low > 0, got low {low}; raise low or set log: false")


_TAGS = ("int", "float", "categorical")
ParameterRange = Annotated[IntRange | FloatRange | Categorical, Field(discriminator="type")]


class SearchSpace(BaseModel):
    """What Optuna may vary; every parameter not listed keeps the pipeline's base value."""

    model_config = SETTINGS_CONFIG

    parameters: dict[str, ParameterRange]
    """Hyperparameter name to its range."""

    @model_validator(mode="after")
    def _known(self) -> SearchSpace:
        if not self.parameters:
            raise ValueError("search space has no parameters; list at least one of " + ", ".join(TUNABLE))
        unknown = sorted(set(self.parameters) - set(TUNABLE))
        if unknown:
            raise ValueError(
                f"unknown parameter(s) {unknown}: not TrainConfig/ModelConfig fields the train step takes; "
                f"tunable: {', '.join(TUNABLE)}"
            )
        return self

    def suggest(self, trial: optuna.Trial) -> dict[str, Any]:
        """Draw one value per parameter from ``trial``; list choices come back as lists."""
        values: dict[str, Any] = {}
        for name, spec in self.parameters.items():
            if isinstance(spec, IntRange):
                values[name] = trial.suggest_int(name, spec.low, spec.high, step=spec.step, log=spec.log)
            elif isinstance(spec, FloatRange):
                values[name] = trial.suggest_float(name, spec.low, spec.high, step=spec.step, log=spec.log)
            else:
                values[name] = spec.decode(trial.suggest_categorical(name, spec.optuna_choices()))
        return values

    def decode(self, optuna_params: Mapping[str, Any]) -> dict[str, Any]:
        """A finished trial's stored params in training terms (``"64,32"`` back to ``[64, 32]``)."""
        decoded = dict(optuna_params)
        for name, spec in self.parameters.items():
            if isinstance(spec, Categorical) and name in decoded:
                decoded[name] = spec.decode(decoded[name])
        return decoded

    def check_against(self, base: TrainConfig) -> None:
        """Build the training config at every bound and choice, so a bad value fails now, not in a trial."""
        for name, spec in self.parameters.items():
            extremes = spec.choices if isinstance(spec, Categorical) else [spec.low, spec.high]
            for value in extremes:
                try:
                    apply(base, {name: value})
                except ValidationError as exc:
                    first = exc.errors()[0]
                    raise SearchSpaceError(
                        f"search space parameter {name!r}: value {value!r} is not a valid training setting "
                        f"({first['msg']}); narrow the range"
                    ) from exc


def apply(base: TrainConfig, params: Mapping[str, Any]) -> TrainConfig:
    """``base`` with ``params`` substituted, validated as a whole (trials always run in one process)."""
    data = base.model_dump()
    data["nproc"] = 1
    for name, value in params.items():
        if name in MODEL_PARAMETERS:
            data["model"][name] = tuple(value) if isinstance(value, list | tuple) else value
        else:
            data[name] = value
    return TrainConfig.model_validate(data)


def parse_space(raw: Any, source: str) -> SearchSpace:
    """Validate raw data; the error names ``source`` and the offending parameter."""
    try:
        return SearchSpace.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'] if p not in _TAGS) or 'space'}: "
            f"{err['msg'].removeprefix('Value error, ')}"
            for err in exc.errors()
        )
        raise SearchSpaceError(f"invalid search space in {source}: {problems}") from None


def load_space(path: str | Path = "", overrides: Mapping[str, Any] | None = None) -> SearchSpace:
    """Read a YAML/JSON space (``""``: the repo's default); ``overrides`` replace or add whole parameters."""
    import json

    import yaml

    file = Path(path) if str(path).strip() else DEFAULT_SPACE_FILE
    if not file.is_file():
        raise SearchSpaceError(f"search space file {file} does not exist; pass a YAML or JSON file path")
    text = file.read_text()
    try:
        raw = json.loads(text) if file.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise SearchSpaceError(f"search space file {file} is not valid {file.suffix[1:]}: {exc}") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("parameters", {}), dict):
        raise SearchSpaceError(f"search space file {file} must be a mapping with a 'parameters' mapping")
    source = str(file)
    if overrides:
        raw = {**raw, "parameters": {**(raw.get("parameters") or {}), **overrides}}
        source += " (with search_space overrides)"
    return parse_space(raw, source)
