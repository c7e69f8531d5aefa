"""Turn ``--set section.field=value`` (and ``--section.field value``) into typed settings, by address.

The pipeline's form (:class:`pipelines.signature.PipelineForm`) is the schema: every
setting's address, type, default and description come from its stage's typed config, so
the command line, the KFP UI form and the compiled YAML agree. A value is typed here from
the setting's annotation by pydantic's rules for text (``TypeAdapter.validate_strings``: so
``--set train.epochs=three`` is refused with an example before anything runs); a list is a
comma list of such values or JSON, an object is JSON. Ranges and cross-field rules are the
configs' own validation (:func:`checked_arguments`).
"""

from __future__ import annotations

import functools
import json
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, get_args, get_origin

from pydantic import BaseModel, TypeAdapter

if TYPE_CHECKING:
    from pipelines.signature import FormSetting, PipelineForm


class ParameterError(ValueError):
    """A ``--set`` value or address does not fit the pipeline; the message says which and how to fix it."""


def _optional(annotation: Any) -> Any:
    """``X | None`` → ``X`` (no setting is optional today; a future one types like its inner type)."""
    if get_origin(annotation) in (typing.Union, types.UnionType):
        inner = [arg for arg in get_args(annotation) if arg is not type(None)]
        if len(inner) == 1:
            return inner[0]
    return annotation


def _element(annotation: Any) -> Any | None:
    """The element type of a tuple/list setting, None for any other."""
    annotation = _optional(annotation)
    if get_origin(annotation) in (tuple, list) and get_args(annotation):
        return get_args(annotation)[0]
    return None


def kind(annotation: Any) -> str:
    """What a setting holds, in the words the help and the errors use."""
    annotation = _optional(annotation)
    origin = get_origin(annotation)
    if origin is Literal:
        return "choice"
    if annotation in (str, int, float, bool):
        return {str: "text", int: "integer", float: "float", bool: "boolean"}[annotation]
    element = _element(annotation)
    if element is not None:
        return "list" if element in (str, int, float, bool) else "JSON list"
    if annotation is dict or origin is dict:
        return "JSON object"
    return "JSON"


def metavar(setting: FormSetting) -> str:
    """The value placeholder ``--help`` shows: ``INT``, ``{auto,fp32}``, ``LIST`` …"""
    annotation = _optional(setting.annotation)
    if get_origin(annotation) is Literal:
        return "{" + ",".join(str(choice) for choice in get_args(annotation)) + "}"
    return {
        "text": "TEXT",
        "integer": "INT",
        "float": "FLOAT",
        "boolean": "BOOL",
        "list": "LIST",
        "JSON list": "JSON",
        "JSON object": "JSON",
    }.get(kind(annotation), "JSON")


EXAMPLES = {
    "integer": "3",
    "float": "0.5",
    "boolean": "true",
    "list": "a,b or a JSON list",
    "JSON list": '[{"key": 1}]',
    "JSON object": '{"key": 1}',
    "JSON": '{"key": 1}',
}


def _json(raw: str) -> Any:
    """``raw`` as JSON proper: NaN and Infinity, which Python's reader takes but JSON lacks, are refused
    (in a JSON-typed setting they would reach the run as null)."""

    def refuse(constant: str) -> Any:
        raise ValueError(f"{constant} is not a JSON value")

    return json.loads(raw, parse_constant=refuse)


@functools.cache
def _string_reader(element: type) -> TypeAdapter[Any]:
    return TypeAdapter(element)


def _scalar(element: Any, raw: str) -> Any:
    """``raw`` read as pydantic reads a setting given as text (an environment variable, a query string): the
    same rules as every other door to a config, ``true``/``yes``/``on``/``1`` … for a boolean, ``3`` or ``3.0``
    but not ``3.5`` for an integer. Text is kept as written."""
    if element is str:
        return raw
    return _string_reader(element).validate_strings(raw.strip())


def _typed(annotation: Any, raw: str) -> Any:
    annotation = _optional(annotation)
    origin = get_origin(annotation)
    if origin is Literal:
        choices = get_args(annotation)
        for choice in choices:
            if str(choice) == raw.strip():
                return choice
        raise ValueError(raw)
    if annotation in (str, int, float, bool):
        return _scalar(annotation, raw)
    element = _element(annotation)
    if element is not None:
        if raw.strip().startswith("["):
            value = _json(raw)
            if not isinstance(value, list):
                raise ValueError(raw)
            return value
        if element not in (str, int, float, bool):
            raise ValueError(raw)  # items that are models or dicts only as JSON
        return [_scalar(element, item.strip()) for item in raw.split(",") if item.strip()]
    if annotation is dict or origin is dict:
        value = _json(raw)
        if not isinstance(value, dict):
            raise ValueError(raw)
        return value
    return _json(raw)


def coerce(setting: FormSetting, raw: str, flag: bool = False) -> Any:
    """``raw`` as the setting's type; the error shows how the user gave it (``--set`` or a flag) and an example."""
    try:
        return _typed(setting.annotation, raw)
    except (ValueError, json.JSONDecodeError) as exc:
        label = kind(setting.annotation)
        if label == "choice":
            expected = "one of " + ", ".join(str(c) for c in get_args(_optional(setting.annotation)))
            example = str(get_args(_optional(setting.annotation))[0])
        else:
            expected, example = label, EXAMPLES.get(label, "text")
        given = f"--{setting.address} {raw!r}" if flag else f"--set {setting.address}={raw!r}"
        raise ParameterError(f"{given}: expected {expected} (e.g. {setting.address}={example})") from exc


def unknown_address(form: PipelineForm, address: str) -> ParameterError:
    """The error for an address this pipeline lacks (:func:`mlops.settings.unknown_address`)."""
    from mlops import settings

    return ParameterError(settings.unknown_address(form.settings, address, form.name))


def find_setting(form: PipelineForm, address: str) -> FormSetting:
    for setting in form.settings:
        if setting.address == address:
            return setting
    raise unknown_address(form, address)


def _is_group(form: PipelineForm, address: str) -> bool:
    """True when ``address`` is a section or a nested model in one (``train``, ``train.model``)."""
    return any(setting.address.startswith(address + ".") for setting in form.settings)


def _spread(form: PipelineForm, address: str, value: Any, given: str) -> dict[str, Any]:
    """A JSON object given for a section (or a nested model) as address → value of each of its settings."""
    if not isinstance(value, dict):
        raise ParameterError(
            f"{given}: {address} is a group of settings; give a JSON object, e.g. {address}={{}}"
        )
    values: dict[str, Any] = {}
    for key, item in value.items():
        inner = f"{address}.{key}"
        if any(setting.address == inner for setting in form.settings):
            values[inner] = item  # JSON-typed already; the config's validation checks it
        elif _is_group(form, inner):
            values.update(_spread(form, inner, item, given))
        else:
            raise unknown_address(form, inner)
    return values


def parse_assignment(form: PipelineForm, assignment: str) -> dict[str, Any]:
    """One ``address=value`` (or ``section={json}`` for several settings of a section) as typed values."""
    address, sep, raw = assignment.partition("=")
    address = address.strip()
    if not sep or not address:
        raise ParameterError(f"--set {assignment!r} is not section.field=value (e.g. train.epochs=5)")
    if not any(setting.address == address for setting in form.settings) and _is_group(form, address):
        try:
            value = _json(raw)
        except ValueError as exc:  # json.JSONDecodeError, or NaN/Infinity
            raise ParameterError(
                f"--set {address}={raw!r}: {address} is a group of settings; give a JSON object "
                f'(e.g. {address}={{"key": 1}}) or one setting as {address}.<field>=value'
            ) from exc
        return _spread(form, address, value, f"--set {address}={raw!r}")
    return {address: coerce(find_setting(form, address), raw)}


def parse_overrides(form: PipelineForm, assignments: Iterable[str]) -> dict[str, Any]:
    """Every ``--set`` assignment as address → typed value; a later one wins."""
    values: dict[str, Any] = {}
    for assignment in assignments:
        values.update(parse_assignment(form, assignment))
    return values


SCHEMA_FILE = "validation.schema_uri"
"""The schema file's setting (``--schema``): when given, it replaces the whole ``schema`` section."""
SCHEMA_SECTION = "schema"


def schema_file_conflicts(values: Mapping[str, Any]) -> None:
    """Refuse a ``schema.*`` setting next to a schema file, which overrides it: never ignore it silently."""
    uri = str(values.get(SCHEMA_FILE) or "").strip()
    overridden = sorted(a for a in values if a.split(".", 1)[0] == SCHEMA_SECTION)
    if not uri or not overridden:
        return
    raise ParameterError(
        f"{', '.join(overridden)} given together with the schema file {uri} (--schema), which declares every "
        f"{SCHEMA_SECTION}.* setting: the value would be ignored. Edit the schema file instead (e.g. add the "
        "column to its ignored_columns, or move it between numeric_features/categorical_features) and run "
        "again without the setting; nothing was run"
    )


def checked_arguments(form: PipelineForm, values: Mapping[str, Any]) -> dict[str, Any]:
    """Complete pipeline arguments for these addressed values; a ParameterError listing every invalid one."""
    for address in values:
        find_setting(form, address)
    schema_file_conflicts(values)
    from mlops.settings import SettingsError

    try:
        return form.arguments(values)
    except SettingsError as exc:
        raise ParameterError("invalid setting(s), nothing was run:\n  " + "\n  ".join(exc.problems)) from exc


def shown(value: Any) -> str:
    """A default as a person would type it after ``--set`` (a list's items separated by ", ", which
    ``--set`` reads as well, so ``--help`` can wrap a long list between items)."""
    if isinstance(value, list) and value and all(isinstance(v, str | int | float) for v in value):
        return ", ".join(map(str, value))
    if isinstance(value, list | dict):
        return json.dumps(value)
    return repr(value) if value == "" else str(value)


def describe_sections(form: PipelineForm) -> Sequence[tuple[str, str]]:
    """(section, the first line of its config's docstring) in the form's order."""
    described = []
    for instance in form.defaults:
        config: type[BaseModel] = type(instance)
        section = str(getattr(config, "section", ""))
        summary = (config.__doc__ or "").strip().splitlines()
        described.append((section, summary[0] if summary else config.__name__))
    return described
