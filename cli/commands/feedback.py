"""``mlops feedback``: store labels that arrived after the predictions, joined later by request id.

The file (CSV or Parquet, local or s3://) has ``request_id`` and ``label`` (0/1) columns, and
``request_row`` for requests of several rows (default 0). It is stored beside the request
log; the next ``mlops monitor`` reports realised accuracy and ROC AUC on the labelled rows
of its window, beside the estimate from scores alone.
"""

from __future__ import annotations

import argparse

from cli.commands.options import add_model_name_option
from mlops.workspace import Workspace

HELP = "store late labels (request_id, label) for the monitor's realised performance"


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("feedback", help=HELP, description=(__doc__ or "").split("\n\n", 1)[1])
    parser.add_argument(
        "--labels", required=True, help="CSV or Parquet file with request_id and label columns"
    )
    add_model_name_option(parser)
    parser.add_argument(
        "--request-log-uri",
        dest="request_log_uri",
        default="",
        help="request log root (default <workspace>/request-logs, where mlops serve writes)",
    )
    parser.set_defaults(handler=feedback_command)


def logged_model(root: str, tracking_uri: str) -> str:
    """The registry's only model; with an empty registry, the only model the request log holds."""
    from pathlib import Path

    from cli.model_choice import choose, registered_models

    known = registered_models(tracking_uri)
    if not known and "://" not in root and Path(root).is_dir():
        known = sorted(p.name for p in Path(root).iterdir() if p.is_dir())
    return choose(known, "--model-name", f"the model registry and the request log {root}")


def feedback_command(args: argparse.Namespace, workspace: Workspace) -> int:
    from cli.commands.run import REQUEST_LOG_DIR
    from mlops.monitoring.feedback import store_labels
    from mlops.tracking.context import resolve_tracking

    root = args.request_log_uri or str(workspace.root / REQUEST_LOG_DIR)
    model_name = args.model_name or logged_model(root, resolve_tracking(workspace).tracking_uri)
    stored = store_labels(args.labels, root, model_name)
    print(f"stored {stored.labels} label(s) at {stored.uri}; {stored.matched} match logged request rows")
    if stored.matched == 0:
        print("warning: no label matches a logged request id yet; check --model-name and the ids")
    return 0
