"""``mlops evidence MODEL@ALIAS --out FILE``: one signed archive a reviewer verifies offline.

It holds the signed model card (written now, as ``mlops card`` does), the audit trail segment
of this model (the trail is verified first: a tampered trail is refused, not exported), the
lineage and alias history, every report of the pipeline run (data validation, evaluation,
each gate), the model's signature bundle, an index onto the EU AI Act's Annex IV sections
(saying which need human input) and VERIFY.md. ``mlops evidence --verify FILE`` checks a
pack with nothing but the file and a key the verifier trusts: the workspace's public key by
default, or ``--trusted-key PATH`` / ``--key-id ID``; a pack signed by another key fails unless
``--trust-key-in-pack`` is given, which the report then says (see VERIFY.md for the same with
sha256sum and openssl).
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from cli.commands.evidence_trust import add_trust_options, key_lines, trust_given, trusted_key
from cli.commands.options import add_registry_option
from mlops.workspace import Workspace

if TYPE_CHECKING:
    from mlops.governance.trusted_key import TrustedKey


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "evidence",
        help="export a signed evidence pack (card, audit segment, reports, Annex IV index) for MODEL@ALIAS",
    )
    parser.add_argument(
        "model", nargs="?", default="", help="<model-name>@<alias>, e.g. credit-default@champion"
    )
    parser.add_argument("--out", type=Path, default=None, help="the archive to write (.zip)")
    parser.add_argument(
        "--schema", default="", help="the data's schema file (its card: block fills the card)"
    )
    parser.add_argument(
        "--verify",
        type=Path,
        default=None,
        help="verify an exported pack offline instead (against a trusted key)",
    )
    add_trust_options(parser, "pack")
    add_registry_option(parser)
    parser.set_defaults(handler=evidence_command)


def evidence_command(args: argparse.Namespace, workspace: Workspace) -> int:
    if args.verify is not None:
        return verify_command(args.verify, trusted_key(args, workspace))
    if not args.model or args.out is None:
        raise ValueError(
            "write `mlops evidence MODEL@ALIAS --out FILE.zip` (or `mlops evidence --verify FILE.zip`)"
        )
    if trust_given(args):
        raise ValueError(
            "--trusted-key, --key-id and --trust-key-in-pack choose the key `mlops evidence --verify FILE.zip` "
            "checks against; an export signs with the workspace's signing key"
        )
    return export_command(args, workspace)


def verify_command(pack: Path, trust: TrustedKey) -> int:
    from cli.commands.audit import print_verdict
    from mlops.governance.evidence_pack import verify_pack

    checked = verify_pack(pack, trust)
    print(f"evidence pack     {pack}")
    signers = [("signed by", checked.manifest)]
    if checked.card is not None:
        signers.append(("card signed by", checked.card))
    for line in key_lines(trust, signers):
        print(line)
    by = "the key shipped inside" if trust.in_pack else f"the trusted key {trust.key_id}"
    return print_verdict(
        checked.problems,
        f"every file matches the manifests signed by {by}, and the audit segment chains to its head",
    )


def export_command(args: argparse.Namespace, workspace: Workspace) -> int:
    from cli.commands.card import card_fields
    from mlops.data.card_fields import CardFields
    from mlops.governance.audit import read_events, record, verify
    from mlops.governance.card_files import write_card
    from mlops.governance.evidence_pack import EVIDENCE_EXPORTED, EvidenceError, build_pack, segment
    from mlops.governance.provenance import history_lines, lineage_lines
    from mlops.governance.signing import SigningSettings, workspace_defaults
    from mlops.origin_facts import file_sha256
    from mlops.tracking.context import resolve_tracking
    from mlops.tracking.model_facts import collect, download_signature, resolve_alias
    from mlops.vocabulary import DATASET_DIGEST_TAG

    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    fields, source = card_fields(args.schema)
    assert isinstance(fields, CardFields)
    out = Path(args.out)
    if out.suffix != ".zip":
        raise ValueError(
            f"--out {out}: the evidence pack is a zip archive; name it e.g. {out.with_suffix('.zip')}"
        )
    store = resolve_tracking(workspace, tracking_uri=args.tracking_uri).store
    name, alias, version = resolve_alias(store, args.model)
    with (
        workspace_defaults(workspace.root, sign=False),
        tempfile.TemporaryDirectory(prefix="mlops-evidence-") as tmp,
    ):
        checked = verify(workspace.root)
        if not checked.intact:
            raise EvidenceError(
                f"the audit trail {checked.location} does not verify ({'; '.join(checked.problems[:3])}); "
                "an evidence pack is only exported from an intact trail: run `mlops audit verify` and investigate"
            )
        key = SigningSettings.from_env().private_key(workspace.root)
        work = Path(tmp)
        facts = collect(store, name, alias, version, read_events(workspace.root), work / "reports")
        written = write_card(work / "card", facts, fields, source, key, workspace.root)
        events = read_events(workspace.root)  # now with the card's record
        trail = segment(events, name, version, facts.tags.get(DATASET_DIGEST_TAG, ""))
        chain = trail.records
        texts = {
            "lineage.txt": "\n".join(
                [*lineage_lines(name, alias, version, facts.tags, events), "", *history_lines(name, events)]
            )
            + "\n"
        }
        bundle = download_signature(store, facts.tags, work / "signature")
        signed = build_pack(
            out, work / "card", work / "reports", trail, (name, alias, version), texts, bundle, key,
            written.empty_fields, written.audit_seq,
        )  # fmt: skip
        event = record(
            EVIDENCE_EXPORTED,
            f"{name}/{version}",
            {
                "alias": alias,
                "archive": str(out.resolve()),
                "archive_sha256": file_sha256(out),
                "manifest_sha256": signed.manifest_sha256,
                "signing_key_id": signed.key_id,
                "audit_segment": [chain[0].seq, chain[-1].seq],
            },
            links={"model_version": f"{name}/{version}"},
            workspace_root=workspace.root,
        )
    print(f"evidence pack     {out} ({len(signed.files)} files) for {name}@{alias} = version {version}")
    print(
        f"audit segment     records {chain[0].seq}-{chain[-1].seq} (trail verified intact), {len(trail.about)} of them "
        f"this model's (the others only as links); export recorded as {event.seq}"
    )
    print(f"signed            key {signed.key_id}; manifest sha256 {signed.manifest_sha256}")
    print(
        "annex IV          ANNEX_IV.md maps the files to the sections; sections needing human input are marked"
    )
    print(
        f"verify offline    unzip, then VERIFY.md; or `mlops evidence --verify {out}` (against this workspace's key; "
        "elsewhere add --trusted-key with the platform's signing.pub)"
    )
    return 0
