"""Typed configs in sections: one address per setting, section dicts decoded back, clear errors."""

from __future__ import annotations

import typing
from typing import ClassVar

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mlops.settings import (
    EnvSettings,
    SettingsError,
    addressed,
    from_addressed,
    from_section,
    from_values,
    iter_settings,
    section_values,
    settings_of,
    unknown_address,
)


class Inner(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    widths: tuple[int, ...] = Field(default=(8, 4), description="Layer widths.")
    rate: float = Field(default=0.1, ge=0, lt=1, description="A rate.")


class Outer(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    section: ClassVar[str] = "outer"

    epochs: int = Field(default=3, ge=1, description="Epochs.")
    name: str = Field(default="x", description="A name.")
    mode: typing.Literal["a", "b"] = Field(default="a", description="A mode.")
    flag: bool = Field(default=False, description="A flag.")
    inner: Inner = Field(default_factory=Inner, description="Nested.")
    extra: dict[str, int] = Field(default_factory=dict, description="A mapping.")
    rate: float = Field(default=0.5, description="Same field name as inner.rate: unique only by address.")


class Other(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    section: ClassVar[str] = "other"

    epochs: int = Field(default=1, description="Same field name as outer.epochs, another section.")


def test_settings_are_addressed_by_section_and_field_path_in_order() -> None:
    assert [s.address for s in settings_of(Outer)] == [
        "outer.epochs",
        "outer.name",
        "outer.mode",
        "outer.flag",
        "outer.inner.widths",
        "outer.inner.rate",
        "outer.extra",
        "outer.rate",
    ]
    rate = next(s for s in settings_of(Outer) if s.address == "outer.inner.rate")
    assert (rate.section, rate.path, rate.form_name, rate.keyword) == (
        "outer",
        ("inner", "rate"),
        "outer_inner_rate",
        "inner_rate",
    )
    assert rate.description == "A rate."
    assert addressed(Outer()) == {
        "outer.epochs": 3,
        "outer.name": "x",
        "outer.mode": "a",
        "outer.flag": False,
        "outer.inner.widths": [8, 4],
        "outer.inner.rate": 0.1,
        "outer.extra": {},
        "outer.rate": 0.5,
    }


def test_a_config_without_a_section_is_named() -> None:
    with pytest.raises(SettingsError, match=r"Inner declares no section; add `section: ClassVar\[str\]"):
        settings_of(Inner)


def test_section_values_are_nested_json_without_the_excluded_addresses() -> None:
    config = Outer(epochs=5, inner=Inner(widths=(2,)))
    assert section_values(config) == {
        "epochs": 5,
        "name": "x",
        "mode": "a",
        "flag": False,
        "inner": {"widths": [2], "rate": 0.1},
        "extra": {},
        "rate": 0.5,
    }
    trimmed = section_values(config, exclude={"outer.epochs", "outer.inner.rate"})
    assert "epochs" not in trimmed and trimmed["inner"] == {"widths": [2]}
    with pytest.raises(SettingsError, match=r"cannot exclude 'other.epochs' from section 'outer'"):
        section_values(config, exclude={"other.epochs"})


def test_a_section_round_trips_through_from_section() -> None:
    config = Outer(epochs=7, mode="b", inner=Inner(widths=(16, 2), rate=0.25), extra={"k": 1})
    assert from_section(Outer, section_values(config)) == config
    assert from_section(Outer, None) == Outer()
    assert from_section(Outer, {"inner": {"rate": 0.3}}) == Outer(inner=Inner(rate=0.3))


def test_values_as_kfp_and_the_ui_hand_them_over_are_decoded_and_validated() -> None:
    # A struct parameter gives ints as floats; a value typed into the form arrives as text.
    config = from_section(
        Outer,
        {"epochs": 3.0, "flag": "true", "inner": {"widths": "[16.0, 2.0]", "rate": "0.25"}, "name": "7"},
    )
    assert config == Outer(epochs=3, flag=True, inner=Inner(widths=(16, 2), rate=0.25), name="7")
    assert from_section(Outer, '{"epochs": 4, "inner": "{\\"rate\\": 0.5}"}') == Outer(
        epochs=4, inner=Inner(rate=0.5)
    )


def test_text_settings_are_never_json_decoded() -> None:
    assert from_section(Outer, {"name": "[1, 2]", "mode": "b"}).name == "[1, 2]"


def test_per_run_settings_arrive_as_keywords_by_field_path() -> None:
    config = from_section(Outer, {"name": "y"}, epochs=9, inner_rate="0.2")
    assert config == Outer(name="y", epochs=9, inner=Inner(rate=0.2))
    with pytest.raises(SettingsError, match=r"Outer has no per-run setting 'epoch'; known: epochs, name"):
        from_section(Outer, {}, epoch=1)
    with pytest.raises(
        SettingsError, match=r"outer.epochs is given both in the 'outer' section and as the per-run"
    ):
        from_section(Outer, {"epochs": 2}, epochs=3)


def test_unknown_setting_is_named_by_address_with_the_known_ones() -> None:
    with pytest.raises(
        SettingsError, match=r"outer has no setting\(s\) \['outer.epoch'\]; known: outer.epochs, outer.name"
    ):
        from_section(Outer, {"epoch": 3})
    with pytest.raises(SettingsError, match=r"outer.inner has no setting\(s\) \['outer.inner.rates'\]"):
        from_section(Outer, {"inner": {"rates": 3}})
    with pytest.raises(SettingsError, match=r"outer must be a JSON object of settings; got 'epochs=3'"):
        from_section(Outer, "epochs=3")


def test_an_invalid_value_names_the_nested_address() -> None:
    with pytest.raises(
        SettingsError, match=r"outer.inner.rate: Input should be less than 1 \(got 1.5\)"
    ) as err:
        from_section(Outer, {"inner": {"rate": "1.5"}})
    assert isinstance(err.value.__cause__, ValidationError)


def test_a_part_of_a_section_is_built_alone() -> None:
    assert from_values(Inner, {"rate": "0.4"}, "outer.inner") == Inner(rate=0.4)
    assert from_values(Inner, None, "outer.inner") == Inner()
    with pytest.raises(SettingsError, match=r"outer.inner has no setting\(s\) \['outer.inner.x'\]"):
        from_values(Inner, {"x": 1}, "outer.inner")


def test_addressed_values_rebuild_several_configs_on_their_defaults() -> None:
    outer, other = from_addressed(
        {"outer.inner.rate": "0.3", "other.epochs": "4", "outer.extra": {"a": 2}},
        [Outer(name="pipeline default"), Other],
    )
    assert outer == Outer(name="pipeline default", inner=Inner(rate=0.3), extra={"a": 2})
    assert other == Other(epochs=4)
    # A dict-valued setting is replaced, not merged into its default.
    (replaced,) = from_addressed({"outer.extra": {"b": 1}}, [Outer(extra={"a": 2})])
    assert replaced.extra == {"b": 1}
    assert from_addressed(addressed(outer), [Outer]) == [outer]


def test_an_unknown_address_names_the_sections() -> None:
    with pytest.raises(
        SettingsError,
        match=r"^unknown setting 'outer.epoch'; did you mean 'outer.epochs'\? outer's settings: outer.epochs, ",
    ):
        from_addressed({"outer.epoch": 1}, [Outer, Other])
    with pytest.raises(
        SettingsError,
        match=r"unknown setting 'nosuch.x'; settings are named section.field; sections: outer, other$",
    ):
        from_addressed({"nosuch.x": 1}, [Outer, Other])
    with pytest.raises(
        SettingsError,
        match=r"unknown setting 'epochs'; did you mean 'outer.epochs'\? settings are named section.field",
    ):
        from_addressed({"epochs": 1}, [Outer, Other])
    with pytest.raises(SettingsError, match=r"outer.epochs: Input should be greater than or equal to 1"):
        from_addressed({"outer.epochs": 0}, [Outer])


def test_one_unknown_address_message_points_at_the_address_then_lists_what_is_there() -> None:
    known = settings_of(Outer) + settings_of(Other)
    message = unknown_address(known, "outer.inner.rat", "training")
    assert message == (
        "unknown setting 'outer.inner.rat' of pipeline 'training'; did you mean 'outer.inner.rate'? "
        "outer's settings: outer.epochs, outer.name, outer.mode, outer.flag, outer.inner.widths, "
        "outer.inner.rate, outer.extra, outer.rate"
    )
    # Pre-sections names: a form name, a keyword (field path joined by _) and a bare field name.
    assert "did you mean 'outer.inner.rate'?" in unknown_address(known, "outer_inner_rate")
    assert "did you mean 'outer.inner.rate'?" in unknown_address(known, "inner_rate")
    assert "did you mean 'outer.inner.widths'?" in unknown_address(known, "widths")
    # Nothing close: no guess, and the sections in the order given.
    assert unknown_address(known, "zzz") == (
        "unknown setting 'zzz'; settings are named section.field; sections: outer, other"
    )


def test_a_section_declared_twice_is_refused_and_field_names_repeat_across_sections() -> None:
    assert [s.address for _, s in iter_settings(Outer, Other)][-1] == "other.epochs"

    class Clash(BaseModel):
        section: ClassVar[str] = "outer"
        depth: int = Field(default=1, description="Again.")

    with pytest.raises(SettingsError, match=r"section 'outer' is declared by both Outer and Clash"):
        list(iter_settings(Outer, Clash))


def test_two_settings_with_one_form_name_are_refused() -> None:
    class Ambiguous(BaseModel):
        section: ClassVar[str] = "amb"
        inner: Inner = Field(default_factory=Inner, description="Nested: inner.rate.")
        inner_rate: float = Field(default=0.2, description="Also amb_inner_rate on the form.")

    with pytest.raises(SettingsError, match=r"Ambiguous has two settings named \['inner_rate'\]"):
        settings_of(Ambiguous)


class FromEnv(EnvSettings):
    env_subject = "test settings"

    some_path: str = ""
    """A path."""
    some_flag: bool = True
    """A flag."""


def test_env_settings_read_mlops_variables_and_name_the_bad_one() -> None:
    assert FromEnv.env_name("some_path") == "MLOPS_SOME_PATH"
    assert FromEnv.from_env({"MLOPS_SOME_PATH": "/x", "MLOPS_SOME_FLAG": ""}) == FromEnv(some_path="/x")
    with pytest.raises(
        SettingsError, match=r"invalid test settings in the environment: MLOPS_SOME_FLAG='maybe'"
    ):
        FromEnv.from_env({"MLOPS_SOME_FLAG": "maybe"})
