"""Turn ``--set key=value`` strings into typed pipeline arguments.

The pipeline's own signature is the schema: names and types come from the
compiled component spec, so the CLI, the KFP UI form and the YAML agree.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kfp.dsl.base_component import BaseComponent


class ParameterError(ValueError):
    """A ``--set`` value does not fit the pipeline; the message says which and how to fix it."""


def pipeline_parameters(pipeline: BaseComponent) -> dict[str, str]:
    """Map each pipeline parameter to its KFP type name (``Integer``, ``typing.List[int]``, …)."""
    return {name: spec.type for name, spec in pipeline.component_spec.inputs.items()}


def coerce(name: str, kind: str, raw: str, flag: bool = False) -> Any:
    """``raw`` as the parameter's KFP type; the error shows how the user gave it (``--set`` or flag)."""
    try:
        if kind == "String":
            return raw
        if kind == "Integer":
            return int(raw)
        if kind == "Float":
            return float(raw)
        if kind == "Boolean":
            lowered = raw.strip().lower()
            if lowered not in {"true", "false", "1", "0", "yes", "no"}:
                raise ValueError(raw)
            return lowered in {"true", "1", "yes"}
        if kind == "Dict" or kind.startswith("typing.Dict"):
            value = json.loads(raw)
            if not isinstance(value, dict):
                raise ValueError(raw)
            return value
        if kind == "List" or kind.startswith("typing.List"):
            element = kind[len("typing.List[") : -1] if kind.startswith("typing.List[") else ""
            if raw.strip().startswith("["):
                value = json.loads(raw)
                if not isinstance(value, list):
                    raise ValueError(raw)
                return value
            if element == "dict":
                raise ValueError(raw)  # dict items only as JSON
            items = [item.strip() for item in raw.split(",") if item.strip()]
            if element == "int":
                return [int(item) for item in items]
            if element == "float":
                return [float(item) for item in items]
            return items
    except (ValueError, json.JSONDecodeError) as exc:
        label = "list" if "List" in kind else "dict" if "Dict" in kind else kind.lower()
        example = {
            "integer": "3",
            "float": "0.5",
            "boolean": "true",
            "list": "a,b or a JSON list",
            "dict": '{"key": 1}',
        }.get(label, "text")
        given = f"--{name} {raw!r}" if flag else f"--set {name}={raw!r}"
        raise ParameterError(f"{given}: expected {label} (e.g. {name}={example})") from exc
    raise ParameterError(f"parameter {name} has type {kind}, which --set cannot fill")


def parse_overrides(pipeline: BaseComponent, assignments: Iterable[str]) -> dict[str, Any]:
    params = pipeline_parameters(pipeline)
    values: dict[str, Any] = {}
    for assignment in assignments:
        name, sep, raw = assignment.partition("=")
        name = name.strip()
        if not sep or not name:
            raise ParameterError(f"--set {assignment!r} is not key=value")
        if name not in params:
            close = difflib.get_close_matches(name, params, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ParameterError(f"unknown parameter {name!r}; {hint}known: {', '.join(sorted(params))}")
        values[name] = coerce(name, params[name], raw)
    return values


def merged_arguments(
    pipeline: BaseComponent, base: Mapping[str, Any], overrides: Mapping[str, Any]
) -> dict[str, Any]:
    """Arguments for a run: CLI-derived values, then explicit ``--set`` overrides on top."""
    known = pipeline_parameters(pipeline)
    unknown = [k for k in base if k not in known]
    if unknown:
        raise ParameterError(f"pipeline {pipeline.name} has no parameter(s) {unknown}")
    return {**base, **overrides}
