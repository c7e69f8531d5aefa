"""``mlops ui``: MLflow's UI on the workspace's store."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from mlops.workspace import Workspace


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("ui", help="open MLflow's UI on the local workspace store")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=5000)
    parser.set_defaults(handler=ui_command)


def ui_command(args: argparse.Namespace, workspace: Workspace) -> int:
    workspace.create()
    command = [
        sys.executable,
        "-m",
        "mlflow",
        "server",
        "--backend-store-uri",
        workspace.tracking_uri,
        "--default-artifact-root",
        workspace.artifact_root,
        "--host",
        args.host,
        "--port",
        str(args.port),
        "--workers",
        "1",
    ]
    # One worker and no job runner: ~0.6 GB instead of ~3.6 GB on a laptop.
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    print(f"MLflow UI for {workspace.root} at http://{args.host}:{args.port} (Ctrl-C to stop)")
    try:
        return subprocess.call(command, env=env)
    except KeyboardInterrupt:
        return 0
