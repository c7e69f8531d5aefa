"""Command-line options made from a pipeline's parameters: one flag per parameter, same name.

``mlops run <pipeline> --help`` lists every parameter with its default and
description, read from the pipeline's component spec (which the stage configs
produced), so the CLI, the KFP UI form and the compiled YAML say the same thing.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cli.parameters import coerce, pipeline_parameters

if TYPE_CHECKING:
    from kfp.dsl.base_component import BaseComponent

DATA_ALIAS = "--data"
"""Short, documented spelling of ``--data_uri``."""
SCHEMA_ALIAS = "--schema"
"""Short, documented spelling of ``--schema_uri`` (the file ``mlops data init`` writes)."""


def _shown(value: Any) -> str:
    if isinstance(value, list) and all(isinstance(v, str | int | float) for v in value):
        return ",".join(map(str, value))
    if isinstance(value, list | dict):
        return json.dumps(value)
    return repr(value) if value == "" else str(value)


def add_parameter_flags(parser: argparse.ArgumentParser, pipeline: BaseComponent) -> None:
    """One ``--<name>`` (and ``--<name-with-dashes>``) per pipeline parameter, plus ``--set`` and ``--data``."""
    group = parser.add_argument_group("pipeline parameters (also settable as --set name=value)")
    for name, spec in pipeline.component_spec.inputs.items():
        flags = [f"--{name}"]
        if "-" not in name and "_" in name:
            flags.append(f"--{name.replace('_', '-')}")
        if name == "data_uri":
            flags.append(DATA_ALIAS)
        if name == "schema_uri":
            flags.append(SCHEMA_ALIAS)
        help_text = (spec.description or "").replace("%", "%%")
        default = _shown(spec.default).replace("%", "%%")
        group.add_argument(
            *flags,
            dest=f"param:{name}",
            default=None,
            metavar=spec.type.upper().replace("TYPING.", ""),
            help=f"{help_text} (default: {default})",
        )
    add_set_option(parser, "set a pipeline parameter by name (repeatable); lists as a,b or JSON")


def add_set_option(parser: argparse.ArgumentParser, help_text: str) -> None:
    """``--set NAME=VALUE`` (repeatable) into ``args.overrides``: one spelling for local and remote runs."""
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE", help=help_text
    )


def flag_values(args: argparse.Namespace, pipeline: BaseComponent) -> dict[str, Any]:
    """The parameters given as flags, typed from the pipeline signature."""
    kinds = pipeline_parameters(pipeline)
    values = {}
    for key, raw in vars(args).items():
        if key.startswith("param:") and raw is not None:
            name = key.removeprefix("param:")
            values[name] = coerce(name, kinds[name], raw, flag=True)
    return values


def resolve_files(given: dict[str, Any], file_settings: set[str]) -> dict[str, Any]:
    """Settings that name a file, made absolute (tasks run elsewhere) and checked before anything runs.

    An ``s3://`` URI passes as is; an empty value keeps its meaning (the built-in default).
    """
    resolved = {}
    for name in sorted(file_settings & set(given)):
        value = str(given[name]).strip()
        if not value or value.startswith("s3://"):
            resolved[name] = value
            continue
        path = Path(value.removeprefix("file://")).expanduser().resolve()
        if not path.is_file():
            raise ValueError(
                f"{name} {value!r}: no such file ({path}); pass an existing file (or an s3:// URI for data)"
            )
        resolved[name] = str(path)
    return resolved
