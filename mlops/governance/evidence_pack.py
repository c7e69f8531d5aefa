"""The evidence pack: one signed zip a reviewer verifies offline, with an Annex IV index.

Contents (``mlops evidence MODEL@ALIAS --out FILE``)::

    card/                 the signed model card (its own SHA256SUMS, signature, public key)
    audit/segment.jsonl   the audit trail from this model's first record to the trail's end, verified:
                          this model's records whole, every other record only as its link
                          (sequence number, previous hash, hash), so other models' records never
                          leave the workspace and the chain still reaches the head
    audit/anchor.json     where the segment sits in the trail (first/last record, the head at export)
    lineage.txt           ``mlops lineage`` and ``mlops history`` as printed
    reports/<task>/…      every report of the pipeline run: data validation, evaluation, each gate
    signatures/           the version's OpenSSF model-signing bundle
    ANNEX_IV.md, annex_iv.json   which file answers which Annex IV section; what needs human input
    VERIFY.md             how to verify all of it offline
    SHA256SUMS, SHA256SUMS.sig, signing.pub   the signed manifest of every file above

:func:`verify_pack` checks a pack with nothing but the zip and a key the verifier trusts
(:mod:`mlops.governance.trusted_key`): both manifests and their signatures by that key, every
audit record's hash and link in the segment, and the anchor.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import zipfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from mlops.governance.annex_iv import index, markdown
from mlops.governance.audit import AuditEvent, content_hash
from mlops.governance.manifest_signing import FolderCheck, SignedManifest, sign_folder, verify_folder
from mlops.governance.trusted_key import TrustedKey

EVIDENCE_EXPORTED = "evidence.exported"
SEGMENT = "audit/segment.jsonl"
ANCHOR = "audit/anchor.json"

VERIFY_TEXT = """# Verifying this evidence pack offline

Nothing here needs the platform, its MLflow store or network access: coreutils, OpenSSL and
(for the audit segment) Python 3's standard library, plus the platform's public key.

1. **Signed by the platform's key, not any key.** `signing.pub` in this pack is only the key
   the pack came with: whoever edits a file can re-sign the pack with a fresh key and ship that
   key instead. Check the signature with the platform's public key, obtained from the platform,
   not from this pack (`<workspace>/keys/signing.pub`; on a cluster the file
   `MLOPS_SIGNING_PUBLIC_KEY` names), in the unzipped folder:

       openssl dgst -sha256 -verify PLATFORM-signing.pub -signature SHA256SUMS.sig SHA256SUMS

   The platform key's id is the first 16 hex digits of
   `openssl pkey -pubin -in PLATFORM-signing.pub -outform DER | sha256sum`: the id `mlops keys init`
   printed and every registered version carries as `mlops.signing_key_id`. This pack says it was
   signed with key {key_id}; compare that with the published id rather than trust this line.

2. **Every file is the one that was signed**:

       sha256sum -c SHA256SUMS
       # no file beyond those listed: compare `find . -type f | sort` with SHA256SUMS

3. **The model card** (`card/`) is signed the same way on its own: repeat steps 1 and 2 inside
   `card/`. Its manifest digest is recorded in audit record {card_seq} (`card.signed`).

4. **The audit segment** (`audit/segment.jsonl`, records {first}-{last}): the records about this
   model ({about} of them) are whole; every other record between them is only its link,
   `{{"seq", "prev_hash", "hash", "withheld": true}}`, so no other model's record leaves the
   workspace and the chain can still be followed. Each whole record's `hash` is the SHA-256 of
   its JSON without `hash` (keys sorted, separators `,` `:`), and each `prev_hash` is the
   previous record's `hash`. `verify_audit_segment.py` (standard library only, 25 lines: read it
   first) checks exactly that:

       python3 verify_audit_segment.py audit/segment.jsonl

   The segment's last hash must equal the trail head recorded in `audit/anchor.json`, and a live
   trail can be checked against it (`mlops audit show`, `mlops audit verify`): a withheld record's
   hash is that record's hash in the trail.

5. **The model itself**: `signatures/model.sig` is the version's OpenSSF model-signing bundle;
   with the model's files downloaded, `model_signing verify key MODEL_DIR --signature
   signatures/model.sig --public_key PLATFORM-signing.pub`.

Or, where the platform is installed: `mlops evidence --verify THIS.zip` (against the workspace's
key; elsewhere `--trusted-key PLATFORM-signing.pub`).
"""


SEGMENT_CHECKER = """\"\"\"Check an audit segment offline: every whole record's hash, and each record's link to the one before.\"\"\"

import hashlib
import json
import sys

previous = None
for number, line in enumerate(open(sys.argv[1], encoding="utf-8"), start=1):
    record = json.loads(line)
    claimed = record.pop("hash")
    if record.get("withheld") is True:  # another subject's record: only its link is in the pack
        if set(record) != {"seq", "prev_hash", "withheld"}:
            sys.exit(f"record {record['seq']} (line {number}) is marked withheld but carries content")
    else:
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


WITHHELD = "withheld"
"""Marks a segment line that is another subject's record, reduced to its link."""
LINK_FIELDS = frozenset({"seq", "prev_hash", "hash", WITHHELD})
"""All a withheld line may carry: enough to follow the chain, nothing of the record's content."""


@dataclass(frozen=True)
class Segment:
    """The trail from the first record about a model to its end; which of those records are the model's."""

    records: list[AuditEvent]
    """Every record in that span, in order (the chain has no gap)."""
    about: frozenset[int]
    """Sequence numbers of the records about the model: the pack holds these whole, the rest as links."""

    def lines(self) -> list[dict[str, Any]]:
        """The segment file's records: the model's whole, every other one as its link only."""
        return [
            asdict(event)
            if event.seq in self.about
            else {"seq": event.seq, "prev_hash": event.prev_hash, "hash": event.hash, WITHHELD: True}
            for event in self.records
        ]


def segment(events: Sequence[AuditEvent], name: str, version: str, digest: str) -> Segment:
    """The span from the first record about ``name`` to the trail's end, marking the model's records.

    A record is the model's when its subject is the model or one of its versions, when it links one
    of its versions, when it belongs to a pipeline run that produced one of them, or when it
    validated the version's data (``digest``). Every other record (another model's, with its data
    paths) stays in the workspace; the pack keeps only its link.
    """

    def names_model(event: AuditEvent) -> bool:
        return (
            event.subject == name
            or event.subject.startswith(f"{name}/")
            or event.links.get("model_version", "").startswith(f"{name}/")
        )

    runs = {e.links["pipeline_run_id"] for e in events if names_model(e) and e.links.get("pipeline_run_id")}

    def mine(event: AuditEvent) -> bool:
        return (
            names_model(event)
            or event.links.get("pipeline_run_id", "") in runs
            or (
                bool(digest)
                and event.action == "data.validated"
                and event.details.get("dataset_digest") == digest
            )
        )

    first = next((i for i, e in enumerate(events) if mine(e)), None)
    if first is None:
        raise EvidenceError(f"the audit trail holds no record of {name} version {version}")
    span = list(events[first:])
    return Segment(span, frozenset(e.seq for e in span if mine(e)))


def build_pack(
    out_file: Path,
    card_folder: Path,
    reports_dir: Path,
    trail: Segment,
    model: tuple[str, str, str],
    texts: dict[str, str],
    signature_bundle: Path | None,
    private_key: Path,
    empty_fields: list[str],
    card_seq: int,
) -> SignedManifest:
    """Stage every file, sign the whole and zip it to ``out_file``. ``trail`` must come from a verified trail."""
    name, alias, version = model
    with tempfile.TemporaryDirectory(prefix="mlops-evidence-") as tmp:
        root = Path(tmp) / "evidence"
        shutil.copytree(card_folder, root / "card")
        if reports_dir.is_dir():
            shutil.copytree(reports_dir, root / "reports")
        chain = trail.records
        audit = root / "audit"
        audit.mkdir()
        (root / SEGMENT).write_text(
            "".join(json.dumps(line, sort_keys=True, default=str) + "\n" for line in trail.lines()),
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
                    "records_about_this_model": sorted(trail.about),
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
                key_id=key_id(public),
                card_seq=card_seq,
                first=chain[0].seq,
                last=chain[-1].seq,
                about=len(trail.about),
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
    """Every record whose hash does not match its content, that does not chain to the one before,
    or that is marked withheld but carries more than its link."""
    problems: list[str] = []
    previous: dict[str, Any] | None = None
    for number, line in enumerate(lines, start=1):
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            problems.append(f"{SEGMENT} line {number} is not JSON")
            continue
        if not isinstance(entry, dict):
            problems.append(f"{SEGMENT} line {number} is not an audit record")
            continue
        if entry.get(WITHHELD) is True:
            if set(entry) != LINK_FIELDS:
                problems.append(
                    f"{SEGMENT} record {entry.get('seq')} is marked withheld but carries "
                    f"{', '.join(sorted(set(entry) - LINK_FIELDS)) or 'too little'}"
                )
        elif content_hash(entry) != entry.get("hash"):
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


def anchor_problems(anchor: dict[str, Any], lines: list[str]) -> list[str]:
    """Where ``audit/anchor.json`` disagrees with the segment: its first record, its head, the model's records."""
    entries = []
    for line in lines:
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            return []  # verify_segment names the line
        entries.append(entry if isinstance(entry, dict) else {})
    if not entries:
        return [f"{SEGMENT} holds no record"]
    first, last = entries[0], entries[-1]
    problems = []
    if (anchor.get("first_seq"), anchor.get("first_prev_hash")) != (first.get("seq"), first.get("prev_hash")):
        problems.append(
            f"{ANCHOR} says the segment starts at record {anchor.get('first_seq')}, it starts at {first.get('seq')}"
        )
    if anchor.get("head") != {"seq": last.get("seq"), "hash": last.get("hash")}:
        problems.append(
            f"{ANCHOR} records the head {anchor.get('head')}, the segment ends at record {last.get('seq')} "
            f"(hash {str(last.get('hash'))[:12]})"
        )
    whole = [e.get("seq") for e in entries if e.get(WITHHELD) is not True]
    if anchor.get("records_about_this_model") != whole:
        problems.append(
            f"{ANCHOR} lists records {anchor.get('records_about_this_model')} as this model's, "
            f"the segment holds {whole} whole"
        )
    return problems


@dataclass(frozen=True)
class PackCheck:
    """What :func:`verify_pack` found: every problem, and which keys signed the pack and its card."""

    problems: list[str]
    manifest: FolderCheck
    """The pack's own ``SHA256SUMS``: its signer, the key shipped inside, the trusted key."""
    card: FolderCheck | None
    """The card's own manifest (None: the pack holds no card)."""


def verify_pack(pack: Path, trust: TrustedKey) -> PackCheck:
    """Every problem found in ``pack`` with nothing but the file and ``trust`` (none: intact)."""
    with tempfile.TemporaryDirectory(prefix="mlops-evidence-check-") as tmp:
        root = Path(tmp)
        try:
            with zipfile.ZipFile(pack) as archive:
                for member in archive.namelist():
                    if member.startswith("/") or ".." in Path(member).parts:
                        unsafe = f"{pack} holds an unsafe path {member!r}; refusing to unpack it"
                        return PackCheck([unsafe], FolderCheck([], "", "", trust.key_id), None)
                archive.extractall(root)
        except (zipfile.BadZipFile, OSError) as exc:
            raise EvidenceError(f"{pack} is not a readable evidence pack (zip): {exc}") from exc
        manifest = verify_folder(root, trust)
        problems = list(manifest.problems)
        card = verify_folder(root / "card", trust) if (root / "card").is_dir() else None
        if card is not None:
            problems += [f"card/: {p}" for p in card.problems]
        else:
            problems.append("the pack holds no card/ folder")
        if (root / SEGMENT).is_file():
            lines = [
                line for line in (root / SEGMENT).read_text(encoding="utf-8").splitlines() if line.strip()
            ]
            problems += verify_segment(lines)
            try:
                anchor = json.loads((root / ANCHOR).read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError) as exc:
                problems.append(f"{ANCHOR} is missing or not JSON ({exc})")
            else:
                problems += anchor_problems(anchor if isinstance(anchor, dict) else {}, lines)
        else:
            problems.append(f"the pack holds no {SEGMENT}")
        return PackCheck(problems, manifest, card)
