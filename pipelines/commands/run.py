"""``mlops run training``: run the training pipeline on this machine."""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

from mlops.workspace import Workspace
from pipelines.commands.options import add_data_and_overrides, resolve_data


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("run", help="run a pipeline locally (kfp.local, MLflow on SQLite)")
    parser.add_argument("pipeline", choices=["training"], help="which pipeline to run")
    add_data_and_overrides(parser, "override a pipeline parameter (repeatable); lists as a,b or JSON")
    parser.set_defaults(handler=run_command)


def git_commit(cwd: Path) -> str:
    try:
        result = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return result.stdout.strip() if result.returncode == 0 else ""


def run_command(args: argparse.Namespace, workspace: Workspace) -> int:
    from pipelines.local_run import PipelineFailed, run_locally
    from pipelines.parameters import merged_arguments, parse_overrides
    from pipelines.summary import print_failure, print_summary
    from pipelines.training import training_pipeline

    overrides = parse_overrides(training_pipeline, args.overrides)
    base = {
        "data_uri": resolve_data(args.data),
        "tracking_uri": workspace.tracking_uri,
        "artifact_root": workspace.artifact_root,
        "git_commit": git_commit(Path.cwd()),
    }
    arguments = merged_arguments(training_pipeline, base, overrides)
    try:
        result = run_locally(training_pipeline, arguments, workspace)
    except PipelineFailed as failure:
        print_failure(failure, workspace)
        return 1
    print_summary(workspace, arguments, str(result.output), result.run_dir)
    return 0
