"""``mlops upload``: upload a pipeline to KFP as a new version named by the git commit.

Compile the pipeline (or take --package) and add it to KFP as version <commit[:12]>[-dirty]; the
pipeline is created if absent. --set section.field=value changes a setting's default on the uploaded
version's form (the version name then ends in a digest of those settings). Exit 2 for a bad --set, 3
when KFP cannot be reached or refuses the credentials.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cli.commands.options import add_set_option
from cli.kfp_client.arguments import (
    EXIT_KFP_ERROR,
    add_connection_arguments,
    add_remote_command,
    connection_from_args,
)
from mlops.workspace import Workspace

if TYPE_CHECKING:
    from pipelines.signature import PipelineForm

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
    add_set_option(
        parser,
        "a setting's default on the uploaded version's KFP form, by address (repeatable), e.g. "
        "tracking.tracking_uri=http://mlflow:5000 (mlops run <pipeline> --help lists them)",
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


def _settings(args: argparse.Namespace) -> tuple[PipelineForm | None, dict[str, Any]]:
    """The ``--set`` defaults by address, typed and validated by this checkout's form (none: no form)."""
    from cli.parameters import checked_arguments, parse_overrides
    from pipelines.catalog import forms

    if not args.overrides:
        return None, {}
    if args.package is not None:
        raise ValueError(
            "--set changes the defaults of the pipeline this checkout compiles; leave out --package"
        )
    known = forms()
    if args.pipeline not in known:
        raise ValueError(f"unknown pipeline {args.pipeline!r}; known: {', '.join(sorted(known))}")
    form = known[args.pipeline]
    settings = parse_overrides(form, args.overrides)
    checked_arguments(form, settings)
    return form, settings


def upload_command(args: argparse.Namespace, workspace: Workspace) -> int:
    from cli.kfp_client.connection import open_client
    from cli.kfp_client.kfp_errors import KfpError
    from cli.kfp_client.pipeline_upload import (
        git_state,
        settings_suffix,
        upload_version,
        with_defaults,
        with_image,
    )

    connection = connection_from_args(args, os.environ)
    if args.package is not None and not args.package.is_file():
        raise ValueError(f"--package {args.package}: no such file; pass a YAML written by `mlops compile`")
    form, settings = _settings(args)
    notes = [args.description] if args.description else []
    if args.version_name:
        version_name = args.version_name
    else:
        state = git_state(Path.cwd())
        version_name = state.version_name + (f"-{settings_suffix(settings)}" if settings else "")
        notes.append(f"git commit {state.commit}{' with uncommitted changes' if state.dirty else ''}")
    if args.image:
        notes.append(f"image {args.image}")
    if settings:
        notes.append(
            "defaults " + ", ".join(f"{address}={value}" for address, value in sorted(settings.items()))
        )
    description = "; ".join(notes)
    with tempfile.TemporaryDirectory() as tmp:
        package = args.package or _compile(args.pipeline, Path(tmp))
        if form is not None:
            package = with_defaults(package, form, settings, Path(tmp))
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
