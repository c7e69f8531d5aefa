"""``mlops approve NAME@VERSION --key KEY`` and ``mlops reject NAME@VERSION --reason TEXT --key KEY``.

A second person signs off a version that waits as ``pending-approval`` (``gate.require_approval``):
their identity is the trusted approver whose public key pairs with ``--key`` (``--approvers DIR``, else
``MLOPS_APPROVERS``, else ``<workspace>/approvers/<identity>.pub``). They sign a statement naming the
version's model digest and signature; it is recorded on the version and in the audit trail. Refused,
naming why: an unknown key, a version not pending or that did not pass its gates, an approver who trained
or registered it. ``approve`` then makes the version champion through the usual alias move (as a direct
promotion does), unless ``--no-promote``: then ``mlops rollout start --challenger VERSION`` rolls it out.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path

from cli.commands.options import add_registry_option
from mlops.workspace import Workspace


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    approve = subparsers.add_parser(
        "approve", help="sign off a version pending approval (a second person's approval before production)"
    )
    _common(approve)
    approve.add_argument("--reason", default="", help="a note recorded with the approval")
    approve.add_argument(
        "--promote",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="make the approved version champion now (default); --no-promote leaves it for mlops rollout",
    )
    approve.set_defaults(handler=approve_command)
    reject = subparsers.add_parser(
        "reject", help="refuse a version pending approval; it never becomes champion"
    )
    _common(reject)
    reject.add_argument("--reason", required=True, help="why it is rejected (recorded and shown)")
    reject.set_defaults(handler=reject_command)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", help="NAME@VERSION, e.g. credit-default@7")
    parser.add_argument("--key", type=Path, required=True, help="your private approval key (PEM, P-256)")
    parser.add_argument(
        "--approvers",
        type=Path,
        default=None,
        help="folder of trusted approvers' public keys <identity>.pub (default $MLOPS_APPROVERS, else "
        "<workspace>/approvers)",
    )
    add_registry_option(parser)


def parse_reference(text: str) -> tuple[str, str]:
    """``NAME@VERSION`` as (name, version); a version is a number, never an alias."""
    name, _, version = str(text).partition("@")
    if not name or not version.isdigit():
        raise ValueError(f"{text!r}: write NAME@VERSION with the version number, e.g. credit-default@7")
    return name, version


def approve_command(args: argparse.Namespace, workspace: Workspace) -> int:
    return _decide(args, workspace, "approved")


def reject_command(args: argparse.Namespace, workspace: Workspace) -> int:
    if not args.reason.strip():
        raise ValueError("--reason is empty: say why the version is rejected")
    return _decide(args, workspace, "rejected")


def _decide(args: argparse.Namespace, workspace: Workspace, decision: str) -> int:
    from mlops.governance.signing import workspace_defaults

    with workspace_defaults(workspace.root, sign=False):
        return _signed_decision(args, workspace, decision)


def _signed_decision(args: argparse.Namespace, workspace: Workspace, decision: str) -> int:
    from mlops.governance.approval import decision_problem, sign, statement_for
    from mlops.governance.approvers import ApprovalError, trusted_approvers
    from mlops.tracking.approval_registry import creators, record_decision
    from mlops.tracking.context import resolve_tracking

    name, version = parse_reference(args.model)
    store = resolve_tracking(workspace, tracking_uri=args.tracking_uri).store
    approvers = trusted_approvers(args.approvers, workspace.root)
    approver = approvers.identify(args.key)
    tags = store.version_tags(name, version)
    problem = decision_problem(
        name, version, tags, approver.identity, approver.key_id, creators(store, name, version)
    )
    if problem:
        raise ApprovalError(f"refusing to record {decision} by {approver.identity}: {problem}")
    at = datetime.now(UTC).isoformat()
    statement = statement_for(
        name, version, tags, decision, approver.identity, approver.key_id, at, args.reason
    )
    record_decision(store, statement, sign(statement, args.key))
    print(f"{name}@{version} {decision} by {approver.identity} (key {approver.key_id}) at {at}")
    if decision == "rejected":
        print(f"  it will not become champion: {args.reason}")
        return 0
    if not args.promote:
        print(f"  roll it out with `mlops rollout start --challenger {version} --model-name {name}`")
        return 0
    from components.promotion_gate.promotion import promote

    previous = promote(
        name,
        version,
        store,
        require_approval=True,
        approvers=approvers,
        reason=f"approved by {approver.identity}",
    )
    print(f"  {name} version {version} is now champion (was {previous or 'none'})")
    return 0
