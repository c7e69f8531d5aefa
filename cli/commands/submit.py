"""``mlops submit``: start a run of an uploaded pipeline on KFP.

Start a run of a pipeline version on KFP. Exit 0 when started (or, with --wait, succeeded), 1 when
the awaited run fails or times out, 2 for a bad --set section.field=value (or one the version lacks), 3 when
KFP cannot be reached or refuses the credentials.
"""

from __future__ import annotations

import argparse
import os
import sys

from cli.commands.options import add_set_option
from cli.kfp_client.arguments import (
    EXIT_KFP_ERROR,
    add_connection_arguments,
    add_remote_command,
    connection_from_args,
)
from mlops.workspace import Workspace

EXIT_RUN_FAILED = 1


HELP = "start a run of an uploaded pipeline on KFP"


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = add_remote_command(subparsers, "submit", HELP, __doc__ or "")
    parser.add_argument(
        "--version", help="pipeline version name, e.g. a commit's first 12 hex digits (default: newest)"
    )
    parser.add_argument(
        "--experiment", default="training", help="KFP experiment, created if missing (default training)"
    )
    parser.add_argument("--run-name", help="run name (default: '<pipeline> <version> <UTC time>')")
    add_set_option(
        parser,
        "a setting by its address (repeatable), e.g. train.epochs=5 (mlops run <pipeline> --help lists them); "
        "lists as a,b or JSON; a whole section as section='{\"field\": value}'",
    )
    parser.add_argument(
        "--wait", action="store_true", help="follow the run, printing state changes, until it ends"
    )
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds --wait waits (default 3600)")
    parser.add_argument("--poll", type=float, default=10.0, help="seconds between state checks (default 10)")
    add_connection_arguments(parser)
    parser.set_defaults(handler=submit_command)


def submit_command(args: argparse.Namespace, workspace: Workspace) -> int:
    from cli.kfp_client.connection import open_client
    from cli.kfp_client.kfp_errors import KfpError, RunFailedError
    from cli.kfp_client.run_submission import RunRequest, start_run, wait_for_run

    if args.timeout <= 0 or args.poll <= 0:
        raise ValueError(f"--timeout {args.timeout} and --poll {args.poll} must be positive seconds")
    connection = connection_from_args(args, os.environ)
    request = RunRequest(
        pipeline=args.pipeline,
        version=args.version,
        experiment=args.experiment,
        run_name=args.run_name,
        overrides=tuple(args.overrides),
    )
    try:
        client = open_client(connection)
        started = start_run(client, connection, request)
        print(f"started run {started.run_id} of {args.pipeline} version {started.version_name}")
        for address, value in sorted(started.settings.items()):
            print(f"  {address} = {value!r}")
        if not args.wait:
            return 0
        wait_for_run(client, connection, started.run_id, args.timeout, args.poll)
    except RunFailedError as exc:
        print(f"mlops: run failed: {exc}", file=sys.stderr)
        return EXIT_RUN_FAILED
    except KfpError as exc:
        print(f"mlops: error: {exc}", file=sys.stderr)
        return EXIT_KFP_ERROR
    print(f"run {started.run_id} succeeded")
    return 0
