"""``mlops cluster``: the platform's Kubernetes manifests (``infra/k8s``).

``render --overlay prod`` prints one overlay's manifests (``kubectl apply -f -`` takes them);
``check`` renders every overlay (or the ones named) and validates each object offline.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mlops.workspace import Workspace


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("cluster", help="render and validate the platform's Kubernetes manifests")
    actions = parser.add_subparsers(dest="cluster_action", required=True)
    render = actions.add_parser("render", help="print an overlay's manifests (kubectl kustomize)")
    render.add_argument("--overlay", required=True, help="overlay under infra/k8s/overlays (dev, prod)")
    check = actions.add_parser("check", help="validate overlays offline (Kubernetes and CRD schemas)")
    check.add_argument(
        "--overlay", action="append", default=None, help="overlay to check (repeatable; default: all)"
    )
    for sub in (render, check):
        sub.add_argument(
            "--manifests", type=Path, default=None, help="manifests root (default: this checkout's infra/k8s)"
        )
    render.set_defaults(handler=render_command)
    check.set_defaults(handler=check_command)


def render_command(args: argparse.Namespace, workspace: Workspace) -> int:
    from cli.manifests import MANIFESTS_DIR, render

    sys.stdout.write(render(args.overlay, args.manifests or MANIFESTS_DIR))
    return 0


def check_command(args: argparse.Namespace, workspace: Workspace) -> int:
    from cli.manifests import MANIFESTS_DIR, check, overlays

    root = args.manifests or MANIFESTS_DIR
    names = args.overlay or overlays(root)
    count, problems = check(names, root)
    for problem in problems:
        print(problem, file=sys.stderr)
    verdict = f"{len(problems)} problem(s)" if problems else "all valid"
    print(f"checked {count} objects in overlay(s) {', '.join(names)}: {verdict}")
    return 1 if problems else 0
