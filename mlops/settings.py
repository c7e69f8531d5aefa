"""One source per setting: typed configs become pipeline parameters, CLI flags and back.

Every stage's settings are a pydantic model; each field is a setting with one name,
one default, one description and its validation. A pipeline exposes the *leaves* of
its stages' configs (nested models are flattened: ``TrainConfig.model.dropout`` is the
parameter ``dropout``), so the KFP UI form, ``mlops run --help``, ``--set`` and the
compiled YAML all read them from here. A task receives one stage's leaves as one
``dict`` and rebuilds the config with :func:`from_flat`.

Why values are decoded here: when a pipeline packs parameters into a ``dict`` argument,
KFP substitutes each as text (``"3"``, ``"3.0"``, ``"[128, 64]"``, ``"true"``), so a
non-text field arrives as a JSON string and is parsed back before validation.
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, get_args, get_origin

from pydantic import BaseModel, ConfigDict
from pydantic.fields import FieldInfo

ModelT = TypeVar("ModelT", bound=BaseModel)

SETTINGS_CONFIG = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)
"""Every config's conventions: immutable, unknown settings refused, each field's docstring is its
description (the text the KFP UI form, ``--help`` and the compiled YAML show)."""

LOCAL_FILE: dict[str, Any] = {"local_file": True}
"""``json_schema_extra`` of a setting that names a file (or ``s3://`` object): a local run makes a
relative path absolute and checks the file exists before anything runs (tasks run elsewhere)."""


class SettingsError(ValueError):
    """A setting's value or name does not fit its config; the message names it and the fix."""


@dataclass(frozen=True)
class Leaf:
    """One setting: a non-model field of a config, or of a model nested in it."""

    name: str
    """The setting's one name (field name; unique across a config's nesting)."""
    path: tuple[str, ...]
    """Field names from the top config down to this field."""
    annotation: Any
    """The field's type annotation."""
    field: FieldInfo
    """The pydantic field: default, description, constraints."""

    @property
    def description(self) -> str:
        return " ".join((self.field.description or "").split())

    @property
    def names_a_file(self) -> bool:
        extra = self.field.json_schema_extra
        return isinstance(extra, dict) and bool(extra.get("local_file"))


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def leaves(config: type[BaseModel], _prefix: tuple[str, ...] = ()) -> list[Leaf]:
    """Every setting of ``config``, nested models flattened, in declaration order."""
    found: list[Leaf] = []
    for name, field in config.model_fields.items():
        if _is_model(field.annotation):
            found += leaves(field.annotation, (*_prefix, name))  # type: ignore[arg-type]
        else:
            found.append(Leaf(name, (*_prefix, name), field.annotation, field))
    names = [leaf.name for leaf in found]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated and not _prefix:
        raise SettingsError(
            f"{config.__name__} has setting(s) {duplicated} at two places; names must be unique"
        )
    return found


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, tuple | list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


def _wants_text(annotation: Any) -> bool:
    """True when a field holds text, so a string value must not be JSON-decoded."""
    if annotation is str:
        return True
    origin = get_origin(annotation)
    if origin is Literal:
        return all(isinstance(arg, str) for arg in get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        return any(_wants_text(arg) for arg in get_args(annotation) if arg is not type(None))
    return False


def _decode(leaf: Leaf, value: Any) -> Any:
    if not isinstance(value, str) or _wants_text(leaf.annotation):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value  # validation then names the field and the expected type


def from_flat(config: type[ModelT], values: Mapping[str, Any]) -> ModelT:
    """Build ``config`` from leaf-name → value (as a pipeline task receives them); missing ones default."""
    by_name = {leaf.name: leaf for leaf in leaves(config)}
    unknown = sorted(set(values) - set(by_name))
    if unknown:
        raise SettingsError(f"{config.__name__} has no setting(s) {unknown}; known: {', '.join(by_name)}")
    nested: dict[str, Any] = {}
    for name, value in values.items():
        leaf = by_name[name]
        target = nested
        for part in leaf.path[:-1]:
            target = target.setdefault(part, {})
        target[leaf.path[-1]] = _decode(leaf, value)
    return config.model_validate(nested)


def flat(settings: BaseModel) -> dict[str, Any]:
    """Leaf-name → JSON-able value: the inverse of :func:`from_flat`."""
    values: dict[str, Any] = {}
    for leaf in leaves(type(settings)):
        value: Any = settings
        for part in leaf.path:
            value = getattr(value, part)
        values[leaf.name] = _jsonable(value)
    return values


def pipeline_type(leaf: Leaf) -> Any:
    """The annotation KFP accepts for this setting (``int``, ``List[int]``, ``dict`` …)."""
    annotation = leaf.annotation
    if annotation in (str, int, float, bool, dict):
        return annotation
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin is Literal:
        kinds = {type(arg) for arg in args}
        if len(kinds) == 1 and next(iter(kinds)) in (str, int, float, bool):
            return next(iter(kinds))
    if origin in (tuple, list) and args:
        element = args[0]
        if element in (str, int, float, bool):
            return typing.List[element]  # type: ignore[valid-type]  # noqa: UP006 - KFP parses typing.List
        if _is_model(element) or get_origin(element) is dict or element is dict:
            return typing.List[dict]  # noqa: UP006
    if origin is dict:
        return dict
    raise SettingsError(
        f"setting {leaf.name!r} has type {annotation!r}, which a pipeline parameter cannot carry; "
        "use str, int, float, bool, a tuple of those, a tuple of models or a dict"
    )


def iter_settings(*configs: type[BaseModel]) -> Iterator[tuple[type[BaseModel], Leaf]]:
    """Every (config, leaf) of several configs; a name used by two configs is an error."""
    seen: dict[str, str] = {}
    for config in configs:
        for leaf in leaves(config):
            if leaf.name in seen:
                raise SettingsError(
                    f"setting {leaf.name!r} is declared by both {seen[leaf.name]} and {config.__name__}; "
                    "one name, one config"
                )
            seen[leaf.name] = config.__name__
            yield config, leaf
