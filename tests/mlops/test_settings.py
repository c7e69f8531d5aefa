"""Typed configs as flat settings: names, KFP-stringified values decoded back, clear errors."""

from __future__ import annotations

import typing

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mlops.settings import SettingsError, flat, from_flat, iter_settings, leaves, pipeline_type


class Inner(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    widths: tuple[int, ...] = Field(default=(8, 4), description="Layer widths.")
    rate: float = Field(default=0.1, ge=0, lt=1, description="A rate.")


class Outer(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    epochs: int = Field(default=3, ge=1, description="Epochs.")
    name: str = Field(default="x", description="A name.")
    mode: typing.Literal["a", "b"] = Field(default="a", description="A mode.")
    flag: bool = Field(default=False, description="A flag.")
    inner: Inner = Field(default_factory=Inner, description="Nested.")
    extra: dict[str, int] = Field(default_factory=dict, description="A mapping.")


def test_nested_models_flatten_to_unique_leaf_names_in_order() -> None:
    assert [leaf.name for leaf in leaves(Outer)] == [
        "epochs",
        "name",
        "mode",
        "flag",
        "widths",
        "rate",
        "extra",
    ]
    assert next(leaf for leaf in leaves(Outer) if leaf.name == "rate").path == ("inner", "rate")
    assert flat(Outer()) == {
        "epochs": 3,
        "name": "x",
        "mode": "a",
        "flag": False,
        "widths": [8, 4],
        "rate": 0.1,
        "extra": {},
    }


def test_values_as_kfp_substitutes_them_are_decoded_and_validated() -> None:
    # Inside a dict argument KFP hands every value over as text; floats for ints under kfp.local.
    config = from_flat(
        Outer, {"epochs": "3.0", "flag": "true", "widths": "[16.0, 2.0]", "rate": "0.25", "name": "7"}
    )
    assert config == Outer(epochs=3, flag=True, inner=Inner(widths=(16, 2), rate=0.25), name="7")
    assert from_flat(Outer, flat(config)) == config


def test_text_settings_are_never_json_decoded() -> None:
    assert from_flat(Outer, {"name": "[1, 2]", "mode": "b"}).name == "[1, 2]"


def test_unknown_setting_is_named_with_the_known_ones() -> None:
    with pytest.raises(SettingsError, match=r"Outer has no setting\(s\) \['epoch'\]; known: epochs, name"):
        from_flat(Outer, {"epoch": 3})


def test_an_invalid_value_names_the_nested_field() -> None:
    with pytest.raises(ValidationError, match=r"inner\.rate\n  Input should be less than 1"):
        from_flat(Outer, {"rate": "1.5"})


def test_a_name_declared_twice_is_refused() -> None:
    class Clash(BaseModel):
        epochs: int = Field(default=1, description="Again.")

    with pytest.raises(SettingsError, match=r"setting 'epochs' is declared by both Outer and Clash"):
        list(iter_settings(Outer, Clash))


def test_pipeline_types_are_the_ones_kfp_accepts() -> None:
    types = {leaf.name: str(pipeline_type(leaf)) for leaf in leaves(Outer)}
    assert types == {
        "epochs": "<class 'int'>",
        "name": "<class 'str'>",
        "mode": "<class 'str'>",
        "flag": "<class 'bool'>",
        "widths": "typing.List[int]",  # KFP's signature parser needs typing.List
        "rate": "<class 'float'>",
        "extra": "<class 'dict'>",
    }

    class Odd(BaseModel):
        when: complex = Field(default=1j, description="Not a KFP type.")

    with pytest.raises(SettingsError, match=r"setting 'when' has type <class 'complex'>"):
        pipeline_type(leaves(Odd)[0])
