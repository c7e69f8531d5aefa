"""Turn ``--set key=value`` strings into typed pipeline arguments.

The pipeline's own signature is the schema: names and types come from the
compiled component spec, so the CLI, the KFP UI form and the YAML agree.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from kfp.dsl.base_component import BaseComponent


class ParameterError(ValueError):
    """A ``--set`` value does not fit the pipeline; the message says which and how to fix it."""


def pipeline_parameters(pipeline: BaseComponent) -> dict[str, tuple[str, Any]]:
    """Map each pipeline parameter to (KFP type name, default)."""
    return {name: (spec.type, spec.default) for name, spec in pipeline.component_spec.inputs.items()}


def _coerce(name: str, kind: str, default: Any, raw: str) -> Any:
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
        if kind == "List":
            if raw.strip().startswith("["):
                value = json.loads(raw)
                if not isinstance(value, list):
                    raise ValueError(raw)
                return value
            items = [item.strip() for item in raw.split(",") if item.strip()]
            if default and all(isinstance(v, int) for v in default):
                return [int(item) for item in items]
            if default and all(isinstance(v, float | int) for v in default):
                return [float(item) for item in items]
            return items
    except (ValueError, json.JSONDecodeError) as exc:
        example = {"Integer": "3", "Float": "0.5", "Boolean": "true", "List": "a,b or [1,2]"}.get(kind, "text")
        raise ParameterError(f"--set {name}={raw!r}: expected {kind.lower()} (e.g. {name}={example})") from exc
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
        kind, default = params[name]
        values[name] = _coerce(name, kind, default, raw)
    return values


def merged_arguments(pipeline: BaseComponent, base: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Arguments for a run: CLI-derived values, then explicit ``--set`` overrides on top."""
    known = pipeline_parameters(pipeline)
    unknown = [k for k in base if k not in known]
    if unknown:
        raise ParameterError(f"pipeline {pipeline.name} has no parameter(s) {unknown}")
    return {**base, **overrides}
