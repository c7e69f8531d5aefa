"""``mlops upload``: upload a pipeline to KFP as a new version named by the git commit.

Compile the pipeline (or take --package) and add it to KFP as version <commit[:12]>[-dirty]; the
pipeline is created if absent. Exit 3 when KFP cannot be reached or refuses the credentials.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from cli.kfp_client.arguments import (
    EXIT_KFP_ERROR,
    add_connection_arguments,
    add_remote_command,
    connection_from_args,
)
from mlops.workspace import Workspace

HELP = "upload a pipeline to KFP as a new version named by the git commit"


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = add_remote_command(subparsers, "upload", HELP, __doc__ or "")
    parser.add_argument(
        "--package", type=Path, help="compiled pipeline YAML to upload (default: compile the pipeline now)"
    )
    parser.add_argument(
        "--version-name",
        help="version name (default: the checkout's commit, first 12 hex digits, -dirty if modified)",
    )
    parser.add_argument("--description", default="", help="description of the version")
    parser.add_argument(
        "--image",
        help="run the platform-image steps in this image instead, e.g. the one CI built for the commit",
    )
    add_connection_arguments(parser)
    parser.set_defaults(handler=upload_command)


def _compile(name: str, out_dir: Path) -> Path:
    from kfp import compiler

    from pipelines.catalog import pipelines

    known = pipelines()
    if name not in known:
        raise ValueError(f"unknown pipeline {name!r}; known: {', '.join(sorted(known))}")
    path = out_dir / f"{name}.yaml"
    compiler.Compiler().compile(known[name], str(path))
    return path


def upload_command(args: argparse.Namespace, workspace: Workspace) -> int:
    from cli.kfp_client.connection import open_client
    from cli.kfp_client.errors import KfpError
    from cli.kfp_client.upload import git_state, upload_version, with_image

    connection = connection_from_args(args, os.environ)
    if args.package is not None and not args.package.is_file():
        raise ValueError(f"--package {args.package}: no such file; pass a YAML written by `mlops compile`")
    notes = [args.description] if args.description else []
    if args.version_name:
        version_name = args.version_name
    else:
        state = git_state(Path.cwd())
        version_name = state.version_name
        notes.append(f"git commit {state.commit}{' with uncommitted changes' if state.dirty else ''}")
    if args.image:
        notes.append(f"image {args.image}")
    description = "; ".join(notes)
    with tempfile.TemporaryDirectory() as tmp:
        package = args.package or _compile(args.pipeline, Path(tmp))
        if args.image:
            package = with_image(package, args.image, Path(tmp))
        try:
            client = open_client(connection)
            result = upload_version(client, connection, package, args.pipeline, version_name, description)
        except KfpError as exc:
            print(f"mlops: error: {exc}", file=sys.stderr)
            return EXIT_KFP_ERROR
    action = "already uploaded, reused" if result.reused_version else "uploaded"
    created = " (new pipeline)" if result.created_pipeline else ""
    print(f"pipeline {args.pipeline}{created} version {result.version_name}: {action}")
    print(f"  pipeline id {result.pipeline_id}")
    print(f"  version id  {result.version_id}")
    return 0
