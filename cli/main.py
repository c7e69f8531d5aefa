"""The ``mlops`` command line."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from cli.commands import approval as approval_cmd
from cli.commands import audit as audit_cmd
from cli.commands import card as card_cmd
from cli.commands import cluster as cluster_cmd
from cli.commands import compile as compile_cmd
from cli.commands import data as data_cmd
from cli.commands import evidence as evidence_cmd
from cli.commands import features as features_cmd
from cli.commands import feedback as feedback_cmd
from cli.commands import forget as forget_cmd
from cli.commands import image as image_cmd
from cli.commands import keys as keys_cmd
from cli.commands import lineage as lineage_cmd
from cli.commands import monitor as monitor_cmd
from cli.commands import quantize as quantize_cmd
from cli.commands import rollout as rollout_cmd
from cli.commands import run as run_cmd
from cli.commands import runs as runs_cmd
from cli.commands import score as score_cmd
from cli.commands import serve as serve_cmd
from cli.commands import submit as submit_cmd
from cli.commands import tune as tune_cmd
from cli.commands import ui as ui_cmd
from cli.commands import upload as upload_cmd
from mlops.tracking.telemetry import telemetry_off
from mlops.workspace import DEFAULT_WORKSPACE, Workspace

COMMANDS = (
    run_cmd,
    compile_cmd,
    tune_cmd,
    ui_cmd,
    serve_cmd,
    quantize_cmd,
    upload_cmd,
    submit_cmd,
    data_cmd,
    features_cmd,
    runs_cmd,
    audit_cmd,
    keys_cmd,
    lineage_cmd,
    cluster_cmd,
    image_cmd,
    monitor_cmd,
    feedback_cmd,
    forget_cmd,
    score_cmd,
    rollout_cmd,
    card_cmd,
    evidence_cmd,
    approval_cmd,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mlops", description="MLOps platform on Kubeflow Pipelines.")
    parser.add_argument(
        "--workspace",
        type=Path,
        default=Path(os.environ.get("MLOPS_WORKSPACE", DEFAULT_WORKSPACE)),
        help="directory for the MLflow store, artifacts and pipeline runs (default ./.mlops or $MLOPS_WORKSPACE)",
    )
    subparsers = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(subparsers)
    return parser


ALIASES = {"tune": ["run", "tuning"]}
"""Commands that are another command's spelling: ``mlops tune …`` is ``mlops run tuning …``."""


def expand_aliases(argv: Sequence[str]) -> list[str]:
    """Replace an alias in command position (after the global ``--workspace DIR``), so its
    arguments, ``--help`` included, reach the command it stands for."""
    args = list(argv)
    position = 0
    while position < len(args) and args[position].startswith("-"):
        position += 1 if "=" in args[position] or args[position] in ("-h", "--help") else 2
    if position < len(args) and args[position] in ALIASES:
        args[position : position + 1] = ALIASES[args[position]]
    return args


def main(argv: Sequence[str] | None = None) -> int:
    telemetry_off()  # before anything imports MLflow; every step, server and container inherits it
    parser = build_parser()
    args = parser.parse_args(expand_aliases(sys.argv[1:] if argv is None else argv))
    try:
        workspace = Workspace(args.workspace)
        return int(args.handler(args, workspace))
    except ValueError as exc:  # our typed errors (bad --set, bad data, bad workspace) are ValueErrors
        print(f"mlops: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
