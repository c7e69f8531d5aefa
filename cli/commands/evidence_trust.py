"""Which key a signed document is verified against, for ``mlops evidence --verify`` and ``mlops card --verify``.

By default the workspace's public key (``MLOPS_SIGNING_PUBLIC_KEY``, else
``<workspace>/keys/signing.pub``); ``--trusted-key PATH`` or ``--key-id ID`` name another;
``--trust-key-in-pack`` accepts the key shipped inside and every report then says so
(:mod:`mlops.governance.trusted_key`). The report names the key that signed and the trusted one.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from mlops.workspace import Workspace

if TYPE_CHECKING:
    from mlops.governance.manifest_signing import FolderCheck
    from mlops.governance.trusted_key import TrustedKey


def add_trust_options(parser: argparse.ArgumentParser, what: str) -> None:
    """``--trusted-key``, ``--key-id`` and ``--trust-key-in-pack`` (at most one), for ``--verify``."""
    group = parser.add_argument_group(
        f"which key the {what} must be signed with (with --verify; give at most one)"
    )
    group.add_argument(
        "--trusted-key",
        type=Path,
        default=None,
        metavar="PATH",
        help="the platform's public key file (signing.pub); default: $MLOPS_SIGNING_PUBLIC_KEY, "
        "else <workspace>/keys/signing.pub",
    )
    group.add_argument(
        "--key-id",
        default="",
        metavar="ID",
        help="the platform's published key id (16 hex digits): the key shipped inside is used only if it has this id",
    )
    group.add_argument(
        "--trust-key-in-pack",
        action="store_true",
        help=f"trust the key shipped inside the {what} (the report says so): this shows the files are "
        "unchanged since signing, not who signed them",
    )


def trust_given(args: argparse.Namespace) -> bool:
    return args.trusted_key is not None or bool(args.key_id) or bool(args.trust_key_in_pack)


def trusted_key(args: argparse.Namespace, workspace: Workspace) -> TrustedKey:
    from mlops.governance.trusted_key import choose

    return choose(args.trusted_key, args.key_id, args.trust_key_in_pack, workspace.root)


def key_lines(trust: TrustedKey, checks: Sequence[tuple[str, FolderCheck]]) -> list[str]:
    """The report's lines on keys: the trusted key, who signed each manifest, and a warning when
    the key shipped inside was trusted. ``checks`` pairs a label (``signed by``) with a check."""
    lines = []
    if trust.in_pack:
        lines.append(f"{'trusted key':<18}none of yours: {trust.source}")
    else:
        lines.append(f"{'trusted key':<18}{trust.key_id} ({trust.source})")
    for label, check in checks:
        if trust.in_pack and check.signer:
            said = f"key {check.signer} (the key shipped inside)"
        elif check.signer and check.signer == check.trusted:
            said = f"key {check.signer} (the trusted key)"
        elif check.signer:
            said = f"key {check.signer}, NOT the trusted key {check.trusted}"
        else:
            shipped = f"; the key shipped inside is {check.shipped}" if check.shipped else ""
            said = f"no signature by the trusted key {check.trusted or '(none)'} verifies{shipped}"
        lines.append(f"{label:<18}{said}")
    if trust.in_pack:
        signers = sorted({check.signer for _, check in checks if check.signer})
        lines.append(
            f"{'warning':<18}trusted the key shipped inside ({', '.join(signers) or 'none'}) because "
            "--trust-key-in-pack was given: this shows the files are unchanged since that key signed them, "
            "not that the platform signed them; compare the key id with the one the platform publishes"
        )
    return lines
