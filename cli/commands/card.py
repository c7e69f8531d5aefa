"""``mlops card MODEL@ALIAS [--out DIR] [--schema FILE]``: write and sign the model card of the version an alias serves.

The card is read from the registry, the pipeline run's task runs and the audit trail
(:mod:`mlops.tracking.model_facts`); the human-written parts come from the schema file's
``card:`` block (``--schema``; without it every such field is listed as empty). It is signed
with the platform's signing key and recorded (``card.signed``) in the audit trail, so
``mlops audit verify`` names a card file edited after signing. ``mlops card --verify DIR``
checks a card folder against a key the verifier trusts (the workspace's public key by default;
``--trusted-key``, ``--key-id``, ``--trust-key-in-pack`` as for ``mlops evidence --verify``).
Offline, with the folder and the platform's public key (not the ``signing.pub`` shipped in the
folder, which proves only that *some* key signed)::

    cd DIR && sha256sum -c SHA256SUMS && openssl dgst -sha256 -verify PLATFORM-signing.pub -signature SHA256SUMS.sig SHA256SUMS
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from cli.commands.evidence_trust import add_trust_options, key_lines, trust_given, trusted_key
from cli.commands.options import add_registry_option
from mlops.workspace import Workspace

CARDS_DIR = "cards"


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "card", help="write and sign the model card (JSON + HTML) of the version MODEL@ALIAS serves"
    )
    parser.add_argument(
        "model", nargs="?", default="", help="<model-name>@<alias>, e.g. credit-default@champion"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="folder to write (default <workspace>/cards/<model>-v<version>)",
    )
    parser.add_argument(
        "--schema",
        default="",
        help="the data's schema file, whose card: block holds intended use, users, limitations",
    )
    add_registry_option(parser)
    parser.add_argument(
        "--verify",
        type=Path,
        default=None,
        metavar="DIR",
        help="verify a signed card folder instead (against a trusted key)",
    )
    add_trust_options(parser, "card")
    parser.set_defaults(handler=card_command)


def card_fields(schema: str) -> tuple[object, str]:
    from mlops.data.card_fields import CardFields
    from mlops.data.schema_file import load_schema_file

    if not schema:
        return CardFields(), "(no schema file given: pass --schema FILE with a card: block)"
    return load_schema_file(schema).card, schema


def card_command(args: argparse.Namespace, workspace: Workspace) -> int:
    if args.verify is not None:
        return verify_command(args.verify, args, workspace)
    if not args.model:
        raise ValueError("write `mlops card MODEL@ALIAS` (or `mlops card --verify DIR`)")
    if trust_given(args):
        raise ValueError(
            "--trusted-key, --key-id and --trust-key-in-pack choose the key `mlops card --verify DIR` checks "
            "against; writing a card signs it with the workspace's signing key"
        )
    return write_command(args, workspace)


def verify_command(folder: Path, args: argparse.Namespace, workspace: Workspace) -> int:
    from cli.commands.audit import print_verdict
    from mlops.governance.manifest_signing import verify_folder

    if not folder.is_dir():
        raise ValueError(f"--verify {folder}: no such folder; give the card's folder (it holds SHA256SUMS)")
    trust = trusted_key(args, workspace)
    checked = verify_folder(folder, trust)
    print(f"model card        {folder}")
    for line in key_lines(trust, [("signed by", checked)]):
        print(line)
    by = "the key shipped inside" if trust.in_pack else f"the trusted key {trust.key_id}"
    return print_verdict(checked.problems, f"every file matches the manifest signed by {by}")


def write_command(args: argparse.Namespace, workspace: Workspace) -> int:
    from mlops.data.card_fields import CardFields
    from mlops.governance.audit import read_events
    from mlops.governance.card_files import write_card
    from mlops.governance.signing import SigningSettings, workspace_defaults
    from mlops.tracking.context import resolve_tracking
    from mlops.tracking.model_facts import collect, resolve_alias

    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    fields, source = card_fields(args.schema)
    assert isinstance(fields, CardFields)
    store = resolve_tracking(workspace, tracking_uri=args.tracking_uri).store
    name, alias, version = resolve_alias(store, args.model)
    out = Path(args.out or workspace.root / CARDS_DIR / f"{name}-v{version}")
    with (
        workspace_defaults(workspace.root, sign=False),
        tempfile.TemporaryDirectory(prefix="mlops-card-") as tmp,
    ):
        facts = collect(store, name, alias, version, read_events(workspace.root), Path(tmp))
        key = SigningSettings.from_env().private_key(workspace.root)
        written = write_card(out, facts, fields, source, key, workspace.root)
    print(f"model card        {name}@{alias} = version {version}")
    print(f"html              {out / 'model_card.html'}")
    print(f"json              {out / 'model_card.json'} (Model Card Toolkit schema 0.0.2) + mlops_facts.json")
    print(f"signed            key {written.signed.key_id}; manifest sha256 {written.signed.manifest_sha256}")
    print(f"audit record      {written.audit_seq} (card.signed); `mlops audit verify` detects a later edit")
    if written.empty_fields:
        print(f"still empty       {', '.join(written.empty_fields)} (fill the schema file's card: block)")
    print(
        f"verify            `mlops card --verify {out}` (against this workspace's key); offline: cd {out} && "
        "sha256sum -c SHA256SUMS && openssl dgst -sha256 -verify PLATFORM-signing.pub -signature SHA256SUMS.sig SHA256SUMS"
    )
    return 0
