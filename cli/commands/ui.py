"""``mlops ui``: MLflow's UI on the resolved tracking store.

With the workspace's SQLite store (the embedded default) it starts MLflow's UI on it; when
``MLFLOW_TRACKING_URI`` (or ``--tracking-uri``) names a tracking server, that server already
serves the UI, so the command says where instead of showing an empty local store.
"""

from __future__ import annotations

import argparse
import os
import subprocess

from mlops.workspace import Workspace


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("ui", help="open MLflow's UI on the local workspace store")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=5000)
    parser.add_argument(
        "--tracking-uri",
        default="",
        help="tracking store (default: $MLFLOW_TRACKING_URI, else the workspace)",
    )
    parser.set_defaults(handler=ui_command)


def ui_command(args: argparse.Namespace, workspace: Workspace) -> int:
    from mlops.tracking.context import redact_uri, resolve_tracking
    from mlops.tracking.served import mlflow_server_command

    tracking = resolve_tracking(workspace, tracking_uri=args.tracking_uri)
    if not tracking.workspace_store:
        if tracking.tracking_uri.startswith(("http://", "https://")):
            print(
                f"Runs are tracked by {redact_uri(tracking.tracking_uri)}: open it in a browser, it serves MLflow's UI."
            )
            return 0
        raise ValueError(
            f"mlops ui shows the workspace store; runs are tracked in {redact_uri(tracking.tracking_uri)}: "
            f"run `mlflow ui --backend-store-uri {redact_uri(tracking.tracking_uri)}` instead"
        )
    workspace.create()
    command = mlflow_server_command(
        workspace.tracking_uri,
        args.host,
        args.port,
        "--default-artifact-root",
        workspace.artifact_root,
    )
    # One worker and no job runner: ~0.6 GB instead of ~3.6 GB on a laptop.
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    print(f"MLflow UI for {workspace.root} at http://{args.host}:{args.port} (Ctrl-C to stop)")
    try:
        return subprocess.call(command, env=env)
    except KeyboardInterrupt:
        return 0
