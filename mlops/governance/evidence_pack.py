"""The evidence pack: one signed zip a reviewer verifies offline, with an Annex IV index.

Contents (``mlops evidence MODEL@ALIAS --out FILE``)::

    card/                 the signed model card (its own SHA256SUMS, signature, public key)
    audit/segment.jsonl   the audit trail from this model's first record to the trail's end, verified
    audit/anchor.json     where the segment sits in the trail (first/last record, the head at export)
    lineage.txt           ``mlops lineage`` and ``mlops history`` as printed
    reports/<task>/…      every report of the pipeline run: data validation, evaluation, each gate
    signatures/           the version's OpenSSF model-signing bundle
    ANNEX_IV.md, annex_iv.json   which file answers which Annex IV section; what needs human input
    VERIFY.md             how to verify all of it offline
    SHA256SUMS, SHA256SUMS.sig, signing.pub   the signed manifest of every file above

:func:`verify_pack` checks a pack with nothing but the zip: both manifests and signatures, and
every audit record's hash and link in the segment.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import zipfile
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from mlops.governance.annex_iv import index, markdown
from mlops.governance.audit import AuditEvent, content_hash
from mlops.governance.manifest_signing import SignedManifest, sign_folder, verify_folder

EVIDENCE_EXPORTED = "evidence.exported"
SEGMENT = "audit/segment.jsonl"
ANCHOR = "audit/anchor.json"

VERIFY_TEXT = """# Verifying this evidence pack offline

Nothing here needs the platform, its MLflow store or network access: coreutils, OpenSSL and
(for the audit segment) Python 3's standard library.

1. **Every file is the one that was signed** (run in the unzipped folder):

       sha256sum -c SHA256SUMS
       openssl dgst -sha256 -verify signing.pub -signature SHA256SUMS.sig SHA256SUMS
       # no file beyond those listed: compare `find . -type f | sort` with SHA256SUMS

2. **Signed by the platform's key, not any key**: the key id is the first 16 hex digits of

       openssl pkey -pubin -in signing.pub -outform DER | sha256sum

   and must be `{key_id}`, the id the platform publishes (`mlops keys init` printed it; every
   registered version carries it as `mlops.signing_key_id`).

3. **The model card** (`card/`) is signed the same way on its own: repeat step 1 inside `card/`.
   Its manifest digest is recorded in audit record {card_seq} (`card.signed`).

4. **The audit segment** (`audit/segment.jsonl`, records {first}-{last}): each record's `hash` is
   the SHA-256 of its JSON without `hash` (keys sorted, separators `,` `:`), and each `prev_hash`
   is the previous record's `hash`. `verify_audit_segment.py` (standard library only, 20 lines:
   read it first) checks exactly that:

       python3 verify_audit_segment.py audit/segment.jsonl

   The segment's last hash must equal the trail head recorded in `audit/anchor.json`, and a live
   trail can be checked against it (`mlops audit show`, `mlops audit verify`).

5. **The model itself**: `signatures/model.sig` is the version's OpenSSF model-signing bundle;
   with the model's files downloaded, `model_signing verify key MODEL_DIR --signature
   signatures/model.sig --public_key signing.pub`.

Or, where the platform is installed: `mlops evidence --verify THIS.zip --key-id {key_id}`.
"""


SEGMENT_CHECKER = """\"\"\"Check an audit segment offline: every record's hash, and each record's link to the one before.\"\"\"

import hashlib
import json
import sys

previous = None
for number, line in enumerate(open(sys.argv[1], encoding="utf-8"), start=1):
    record = json.loads(line)
    claimed = record.pop("hash")
    body = json.dumps(record, sort_keys=True, separators=(",", ":")).encode()
    if hashlib.sha256(body).hexdigest() != claimed:
        sys.exit(f"record {record['seq']} (line {number}) was edited: its content does not match its hash")
    if previous is not None and (record["seq"] != previous[0] + 1 or record["prev_hash"] != previous[1]):
        sys.exit(f"record {record['seq']} (line {number}) does not chain to record {previous[0]}")
    previous = (record["seq"], claimed)
print(f"audit segment intact: records up to {previous[0] if previous else 0}, last hash {previous[1] if previous else ''}")
"""


class EvidenceError(ValueError):
    """The pack cannot be built (a tampered trail, no card) or read; the message says why."""


def segment(events: Sequence[AuditEvent], name: str, version: str, digest: str) -> list[AuditEvent]:
    """The contiguous records from the first one about ``name`` (or its data) to the trail's end."""

    def mine(event: AuditEvent) -> bool:
        return event.subject.startswith(f"{name}/") or (
            bool(digest)
            and event.action == "data.validated"
            and event.details.get("dataset_digest") == digest
        )

    first = next((i for i, e in enumerate(events) if mine(e)), None)
    if first is None:
        raise EvidenceError(f"the audit trail holds no record of {name} version {version}")
    return list(events[first:])


def build_pack(
    out_file: Path,
    card_folder: Path,
    reports_dir: Path,
    events: Sequence[AuditEvent],
    model: tuple[str, str, str],
    texts: dict[str, str],
    signature_bundle: Path | None,
    private_key: Path,
    empty_fields: list[str],
    card_seq: int,
) -> SignedManifest:
    """Stage every file, sign the whole and zip it to ``out_file``. ``events`` must be a verified trail."""
    name, alias, version = model
    with tempfile.TemporaryDirectory(prefix="mlops-evidence-") as tmp:
        root = Path(tmp) / "evidence"
        shutil.copytree(card_folder, root / "card")
        if reports_dir.is_dir():
            shutil.copytree(reports_dir, root / "reports")
        chain = list(events)
        audit = root / "audit"
        audit.mkdir()
        (root / SEGMENT).write_text(
            "".join(json.dumps(asdict(e), sort_keys=True, default=str) + "\n" for e in chain),
            encoding="utf-8",
        )
        (root / ANCHOR).write_text(
            json.dumps(
                {
                    "model": f"{name}/{version}",
                    "alias": alias,
                    "first_seq": chain[0].seq,
                    "first_prev_hash": chain[0].prev_hash,
                    "head": {"seq": chain[-1].seq, "hash": chain[-1].hash},
                    "records_about_this_model": [e.seq for e in chain if e.subject.startswith(f"{name}/")],
                },
                indent=2,
            ),
            encoding="utf-8",
        )
        for filename, text in texts.items():
            (root / filename).write_text(text, encoding="utf-8")
        if signature_bundle is not None:
            (root / "signatures").mkdir()
            shutil.copyfile(signature_bundle, root / "signatures" / "model.sig")
        (root / "verify_audit_segment.py").write_text(SEGMENT_CHECKER, encoding="utf-8")
        (root / "ANNEX_IV.md").write_text(markdown(empty_fields), encoding="utf-8")
        (root / "annex_iv.json").write_text(json.dumps(index(empty_fields), indent=2), encoding="utf-8")
        from mlops.governance.signing import key_id, public_key_of

        public = Path(tmp) / "key.pub"
        public.write_bytes(public_key_of(private_key))
        (root / "VERIFY.md").write_text(
            VERIFY_TEXT.format(
                key_id=key_id(public), card_seq=card_seq, first=chain[0].seq, last=chain[-1].seq
            ),
            encoding="utf-8",
        )
        signed = sign_folder(root, private_key)
        out_file.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(out_file, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(root.rglob("*")):
                if path.is_file():
                    archive.write(path, path.relative_to(root).as_posix())
    return signed


def verify_segment(lines: list[str]) -> list[str]:
    """Every record whose hash does not match its content, or that does not chain to the one before."""
    problems: list[str] = []
    previous: dict[str, Any] | None = None
    for number, line in enumerate(lines, start=1):
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            problems.append(f"{SEGMENT} line {number} is not JSON")
            continue
        if content_hash(entry) != entry.get("hash"):
            problems.append(
                f"{SEGMENT} record {entry.get('seq')} was edited: its content does not match its hash"
            )
        if previous is not None:
            if entry.get("seq") != previous.get("seq", 0) + 1:
                problems.append(
                    f"{SEGMENT} record {entry.get('seq')} does not follow record {previous.get('seq')} (a record was removed)"
                )
            elif entry.get("prev_hash") != previous.get("hash"):
                problems.append(
                    f"{SEGMENT} record {entry.get('seq')} does not chain to record {previous.get('seq')}"
                )
        previous = entry
    return problems


def verify_pack(pack: Path, trusted_key_id: str = "") -> list[str]:
    """Every problem found in ``pack`` with nothing but the file (empty: intact)."""
    with tempfile.TemporaryDirectory(prefix="mlops-evidence-check-") as tmp:
        root = Path(tmp)
        try:
            with zipfile.ZipFile(pack) as archive:
                for member in archive.namelist():
                    if member.startswith("/") or ".." in Path(member).parts:
                        return [f"{pack} holds an unsafe path {member!r}; refusing to unpack it"]
                archive.extractall(root)
        except (zipfile.BadZipFile, OSError) as exc:
            raise EvidenceError(f"{pack} is not a readable evidence pack (zip): {exc}") from exc
        problems = verify_folder(root, trusted_key_id)
        if (root / "card").is_dir():
            problems += [f"card/: {p}" for p in verify_folder(root / "card", trusted_key_id)]
        else:
            problems.append("the pack holds no card/ folder")
        if (root / SEGMENT).is_file():
            lines = [
                line for line in (root / SEGMENT).read_text(encoding="utf-8").splitlines() if line.strip()
            ]
            problems += verify_segment(lines)
        else:
            problems.append(f"the pack holds no {SEGMENT}")
        return problems
