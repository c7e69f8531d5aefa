"""``mlops compile``: write the pipelines' KFP YAML (the checked-in golden files)."""

from __future__ import annotations

import argparse
from pathlib import Path

from mlops.workspace import Workspace


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("compile", help="compile pipelines to KFP IR YAML")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="output directory (default: beside each definition, pipelines/<name>/<name>.yaml, checked in)",
    )
    parser.set_defaults(handler=compile_command)


def compile_command(args: argparse.Namespace, workspace: Workspace) -> int:
    from pipelines.catalog import compile_all

    for path in compile_all(args.out):
        print(f"compiled {path}")
    return 0
