"""``mlops lineage <model>@<alias>`` and ``mlops history <model>``: provenance from the registry and the audit trail.

``lineage`` follows the alias to its version and prints the chain back to the dataset
digest, expectation-suite version, code commit, pipeline run, signature and gate
decisions; ``history`` prints which version held each alias, from when to when, and why
it moved, then who approved or rejected which version and when (a second person's sign-off). The registry is found like every command finds it (``--tracking-uri`` >
``MLFLOW_TRACKING_URI`` > the workspace); the audit trail like every writer does.
"""

from __future__ import annotations

import argparse

from cli.commands.options import add_registry_option
from mlops.workspace import Workspace


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    lineage = subparsers.add_parser(
        "lineage", help="where the model an alias serves came from (data, suite, commit, run, gates)"
    )
    lineage.add_argument(
        "model",
        nargs="?",
        default="@champion",
        help="<model-name>@<alias>, e.g. credit-default@champion; '@ALIAS' or nothing: the workspace's model "
        "(when it holds one) at that alias (default champion)",
    )
    add_registry_option(lineage)
    lineage.set_defaults(handler=lineage_command)
    history = subparsers.add_parser("history", help="which version held each alias, when, and why it moved")
    history.add_argument(
        "model",
        nargs="?",
        default="",
        help="registered model name (default: the workspace's, when it holds one)",
    )
    history.set_defaults(handler=history_command)


def lineage_command(args: argparse.Namespace, workspace: Workspace) -> int:
    from mlflow.exceptions import MlflowException

    from cli.model_choice import workspace_model
    from mlops.governance.audit import read_events
    from mlops.governance.provenance import lineage_lines
    from mlops.tracking.context import resolve_tracking

    name, _, alias = str(args.model).partition("@")
    if not alias:
        raise ValueError(f"{args.model!r}: write <model-name>@<alias>, e.g. credit-default@champion")
    store = resolve_tracking(workspace, tracking_uri=args.tracking_uri).store
    name = workspace_model(name, store.tracking_uri, usage=f"mlops lineage {{name}}@{alias}")
    uri = store.tracking_uri
    try:
        version = store.version_by_alias(name, alias)
    except MlflowException as exc:
        raise ValueError(f"{name}@{alias} does not resolve in {uri}: {exc.message}") from exc
    events = read_events(workspace.root)
    print("\n".join(lineage_lines(name, alias, str(version.version), dict(version.tags), events)))
    return 0


def history_command(args: argparse.Namespace, workspace: Workspace) -> int:
    from cli.model_choice import workspace_model
    from mlops.governance.audit import read_events
    from mlops.governance.provenance import approval_lines, history_lines
    from mlops.tracking.context import resolve_tracking

    name = workspace_model(args.model, resolve_tracking(workspace).tracking_uri, usage="mlops history {name}")
    events = read_events(workspace.root)
    print("\n".join([*history_lines(name, events), *approval_lines(name, events)]))
    return 0
