"""Signed manifests: a folder's files, their SHA-256 and one detached ECDSA signature anyone can check offline.

The model card and the evidence pack are documents, not models: they are signed with the
platform's P-256 signing key (the one that signs registered versions,
:mod:`mlops.governance.signing`) over a ``SHA256SUMS`` manifest in ``sha256sum`` format,
with a DER ECDSA-SHA256 signature beside it (``SHA256SUMS.sig``) and the public key
(``signing.pub``). Verifying needs nothing of this platform, only coreutils and OpenSSL::

    sha256sum -c SHA256SUMS
    openssl dgst -sha256 -verify signing.pub -signature SHA256SUMS.sig SHA256SUMS
    openssl pkey -pubin -in signing.pub -outform DER | sha256sum   # first 16 hex = key id

The bundled ``signing.pub`` proves only that the files match *some* key: :func:`verify_folder`
checks the signature with a key the verifier trusts (:mod:`mlops.governance.trusted_key`), and
offline the key id must be the one the platform publishes (``mlops keys init`` printed it; the
audit record names it).
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mlops.origin_facts import file_sha256

if TYPE_CHECKING:
    from mlops.governance.trusted_key import TrustedKey

MANIFEST_FILE = "SHA256SUMS"
SIGNATURE_FILE = "SHA256SUMS.sig"
PUBLIC_KEY_FILE = "signing.pub"
CONTROL_FILES = (MANIFEST_FILE, SIGNATURE_FILE, PUBLIC_KEY_FILE)
"""Files the manifest does not list (it cannot list itself or its signature)."""


class ChecksumManifestError(ValueError):
    """A folder cannot be signed (no files, unreadable key); the message names the fix."""


@dataclass(frozen=True)
class SignedManifest:
    manifest_sha256: str
    """SHA-256 of ``SHA256SUMS``: what the audit trail records."""
    files: dict[str, str]
    """Relative path -> SHA-256 of every signed file."""
    key_id: str


def _listed(folder: Path) -> list[str]:
    return sorted(
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        if p.is_file() and p.relative_to(folder).as_posix() not in CONTROL_FILES
    )


def manifest_text(files: dict[str, str]) -> str:
    """``sha256sum`` format (two spaces, binary-safe names only), sorted by path."""
    return "".join(f"{digest}  {name}\n" for name, digest in sorted(files.items()))


def parse_manifest(text: str) -> dict[str, str]:
    files: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        digest, sep, name = line.partition("  ")
        if not sep or len(digest) != 64 or not name:
            raise ChecksumManifestError(
                f"{MANIFEST_FILE} line {number} is not '<sha256>  <path>': {line[:80]!r}"
            )
        files[name.removeprefix("*")] = digest
    return files


def sign_folder(folder: Path, private_key: Path) -> SignedManifest:
    """Write ``SHA256SUMS`` (every file under ``folder``), its signature and the public key into ``folder``."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    from mlops.governance.signing import key_id, public_key_of

    names = _listed(folder)
    if not names:
        raise ChecksumManifestError(f"{folder} holds no files to sign")
    files = {name: file_sha256(folder / name) for name in names}
    text = manifest_text(files).encode()
    key = load_pem_private_key(Path(private_key).read_bytes(), password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ChecksumManifestError(
            f"{private_key} is not an EC (P-256) private key; make one with `mlops keys init`"
        )
    (folder / MANIFEST_FILE).write_bytes(text)
    (folder / SIGNATURE_FILE).write_bytes(key.sign(text, ec.ECDSA(hashes.SHA256())))
    (folder / PUBLIC_KEY_FILE).write_bytes(public_key_of(Path(private_key)))
    return SignedManifest(hashlib.sha256(text).hexdigest(), files, key_id(folder / PUBLIC_KEY_FILE))


@dataclass(frozen=True)
class FolderCheck:
    """What :func:`verify_folder` found: every problem, and which key signed."""

    problems: list[str]
    signer: str
    """Id of the key whose signature over ``SHA256SUMS`` verifies (empty when none does)."""
    shipped: str
    """Id of the ``signing.pub`` shipped in the folder (empty when it is missing or not a key)."""
    trusted: str
    """Id of the key the signature had to verify with (the shipped one's under ``--trust-key-in-pack``)."""


def verify_folder(folder: Path, trust: TrustedKey) -> FolderCheck:
    """Every problem with ``folder``'s signed manifest (none: intact), and the key that signed it.

    The signature over ``SHA256SUMS`` is checked with the key ``trust`` names, never merely with
    the bundled ``signing.pub`` (unless ``trust`` says to trust it): a manifest re-signed with
    another key fails and both keys are named. Then every listed file's SHA-256, and that no file
    was added beside them. Needs only this folder and the trusted key: it works offline.
    """
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    from mlops.governance.signing import key_id

    folder = Path(folder)
    missing = [name for name in CONTROL_FILES if not (folder / name).is_file()]
    if missing:
        return FolderCheck(
            [f"{folder} has no {', '.join(missing)}: it was never signed or the signature was removed"],
            "",
            "",
            trust.key_id,
        )
    problems: list[str] = []
    text = (folder / MANIFEST_FILE).read_bytes()
    signature = (folder / SIGNATURE_FILE).read_bytes()
    shipped_key: object = None
    with contextlib.suppress(ValueError):  # not a PEM key: named below
        shipped_key = load_pem_public_key((folder / PUBLIC_KEY_FILE).read_bytes())
    if isinstance(shipped_key, ec.EllipticCurvePublicKey):
        shipped = key_id(folder / PUBLIC_KEY_FILE)
    else:
        shipped_key, shipped = None, ""
        problems.append(f"{PUBLIC_KEY_FILE} is not a PEM EC public key")
    trusted = trust.key_id or shipped
    trusted_key: object = None
    if trust.public_key is not None:
        trusted_key = load_pem_public_key(trust.public_key.read_bytes())
    elif shipped and shipped == trusted:
        trusted_key = shipped_key
    if _signs(trusted_key, signature, text):
        signer = trusted
        if shipped and shipped != signer:
            problems.append(
                f"{PUBLIC_KEY_FILE} is key {shipped}, not the key that signed ({signer}): the shipped public "
                "key was replaced, so an offline openssl check against it fails"
            )
    elif shipped != trusted and _signs(shipped_key, signature, text):
        signer = shipped
        problems.append(
            f"signed with key {shipped} (the key shipped inside), not the trusted key {trusted} "
            f"({trust.source}): the manifest was re-signed with another key"
        )
    else:
        signer = ""
        problems.append(
            f"{MANIFEST_FILE} does not match its signature by the trusted key {trusted or '(none)'}: "
            "the manifest or its signature was edited after signing"
        )
    try:
        files = parse_manifest(text.decode())
    except (ChecksumManifestError, UnicodeDecodeError) as exc:
        return FolderCheck([*problems, str(exc)], signer, shipped, trusted)
    problems += changed_files(folder, files)
    extra = sorted(set(_listed(folder)) - set(files))
    problems += [f"{name} is not in the signed manifest (added after signing)" for name in extra]
    return FolderCheck(problems, signer, shipped, trusted)


def _signs(public_key: object, signature: bytes, text: bytes) -> bool:
    """Whether ``signature`` is ``public_key``'s ECDSA-SHA256 signature over ``text`` (no key: False)."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec

    if not isinstance(public_key, ec.EllipticCurvePublicKey):
        return False
    try:
        public_key.verify(signature, text, ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        return False
    return True


def changed_files(folder: Path, files: dict[str, str]) -> list[str]:
    """Each listed file that is missing or whose SHA-256 differs from the recorded one."""
    problems = []
    for name, digest in sorted(files.items()):
        path = Path(folder) / name
        if not path.is_file():
            problems.append(f"{name} is missing (deleted after signing)")
        elif file_sha256(path) != digest:
            problems.append(
                f"{name} was edited after signing: sha256 {file_sha256(path)[:12]} != signed {digest[:12]}"
            )
    return problems


@dataclass(frozen=True)
class SignedOutputs:
    """What :func:`signed_outputs` found: the signed folders the trail records, and what changed in them."""

    checked: int
    """Recorded signed folders still on disk, each compared with its recorded files."""
    gone: int
    """Recorded signed folders no longer on disk (moved or deleted; MLflow keeps the durable copy)."""
    problems: list[str]


def signed_outputs(events: Iterable[object]) -> SignedOutputs:
    """For :func:`mlops.governance.audit.verify`'s caller: every signed document the trail records
    (``card.signed``, ``evidence.exported`` with a ``folder`` detail) that was edited since.

    A folder that no longer exists is not a problem (it may have been moved; the copy logged to
    MLflow is the durable one), only counted; a file that changed under it is.
    """
    problems: list[str] = []
    checked = gone = 0
    for event in events:
        details = getattr(event, "details", {}) or {}
        folder = details.get("folder")
        files = details.get("files")
        if not folder or not isinstance(files, dict):
            continue
        if not Path(folder).is_dir():
            gone += 1
            continue
        checked += 1
        who = f"record {getattr(event, 'seq', '?')} ({getattr(event, 'action', '')} {getattr(event, 'subject', '')})"
        problems += [f"{who}: {problem}" for problem in changed_files(Path(folder), files)]
        manifest = Path(folder) / MANIFEST_FILE
        if manifest.is_file() and file_sha256(manifest) != details.get("manifest_sha256"):
            problems.append(
                f"{who}: {MANIFEST_FILE} in {folder} is not the manifest that was signed and recorded"
            )
    return SignedOutputs(checked, gone, problems)


def signed_outputs_problems(events: Iterable[object]) -> list[str]:
    """The problems :func:`signed_outputs` finds (none: every signed document still on disk is unchanged)."""
    return signed_outputs(events).problems
