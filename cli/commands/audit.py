"""``mlops audit verify`` / ``mlops audit show``: check and read the hash-chained audit trail.

The trail is found like every writer finds it (``MLOPS_AUDIT_URI``, else the workspace's
``audit.jsonl``). ``verify`` exits 1 and names every edited, reordered or deleted record.
"""

from __future__ import annotations

import argparse
import json

from mlops.workspace import Workspace


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "audit", help="verify or show the audit trail (who changed what, when, and the ids linking it)"
    )
    actions = parser.add_subparsers(dest="audit_action", required=True)
    verify = actions.add_parser("verify", help="check every record's hash and the chain; name broken records")
    verify.set_defaults(handler=verify_command)
    show = actions.add_parser("show", help="print the records, oldest first")
    show.add_argument("--subject", default="", help="only records whose subject starts with this")
    show.set_defaults(handler=show_command)


def verify_command(args: argparse.Namespace, workspace: Workspace) -> int:
    from mlops.governance.audit import read_events, verify
    from mlops.governance.manifest_signing import signed_outputs

    result = verify(workspace.root)
    # Signed documents the trail records (model cards): a file edited after signing is named too.
    cards = signed_outputs(read_events(workspace.root))
    problems = [*result.problems, *cards.problems]
    gone = f"; {cards.gone} moved or deleted (not checked)" if cards.gone else ""
    print(f"audit trail       {result.location}")
    print(f"records           {result.records}")
    print(f"protection        {result.protection}")
    print(f"signed cards      {cards.checked} compared with the files the trail recorded{gone}")
    return print_verdict(
        problems,
        "every record's hash and the chain check out, and every signed card still on disk is unchanged since signing",
    )


def print_verdict(problems: list[str], intact: str) -> int:
    """The last lines of a verification (``audit verify``, ``evidence --verify``) and its exit status."""
    if not problems:
        print(f"verdict           intact: {intact}")
        return 0
    print(f"verdict           TAMPERED: {len(problems)} problem(s)")
    for problem in problems:
        print(f"  - {problem}")
    return 1


def show_command(args: argparse.Namespace, workspace: Workspace) -> int:
    from mlops.governance.audit import read_events

    for event in read_events(workspace.root):
        if event.subject.startswith(args.subject):
            details = json.dumps(event.details, sort_keys=True, default=str)
            print(f"{event.seq:>5} {event.at} {event.actor:<12} {event.action:<18} {event.subject} {details}")
    return 0
