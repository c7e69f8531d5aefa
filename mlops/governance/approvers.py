"""Whose sign-off counts: the approvers' public keys the verifier holds, one file per person.

A person's identity comes from their key, never from what they type or what an approval carries:
``<approvers>/<identity>.pub`` (a PEM P-256 public key) names one trusted approver. An approval is
signed with that person's private key; the signer is the approver whose public key matches, and a key
no file matches is no approver at all. The folder is ``MLOPS_APPROVERS``, else ``<workspace>/approvers``
(``mlops keys init --dir DIR`` makes a pair; copy its ``signing.pub`` to ``approvers/<name>.pub``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from mlops.settings import EnvSettings

APPROVERS_DIR = "approvers"
"""The workspace's folder of trusted approvers' public keys."""
PUBLIC_SUFFIX = ".pub"
IDENTITY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@-]*")
"""What an approver's identity (the file name before ``.pub``) may be: a user or e-mail name."""


class ApprovalError(ValueError):
    """An approval cannot be given, or one given does not hold; the message names what and how to fix it."""


class ApproverSettings(EnvSettings):
    """Where the trusted approvers' public keys are (``MLOPS_APPROVERS``)."""

    env_error = ApprovalError
    env_subject = "approval settings"

    approvers: str = ""
    """Folder of trusted approvers' public keys, one ``<identity>.pub`` (PEM, P-256) per person; empty: <workspace>/approvers."""


@dataclass(frozen=True)
class Approver:
    """One trusted person: the identity their key file names, and the key."""

    identity: str
    key_id: str
    public_key: Path


@dataclass(frozen=True)
class Approvers:
    """The trusted approvers, by key id, and where that trust comes from (named in every refusal)."""

    source: str
    by_key_id: Mapping[str, Approver] = field(default_factory=dict)

    @classmethod
    def load(cls, folder: Path, source: str) -> Approvers:
        """Every ``<identity>.pub`` in ``folder``; a file that is no P-256 public key is refused, naming it."""
        from mlops.governance.signing import NotAPublicKey, public_key_id

        folder = Path(folder).expanduser()
        if not folder.is_dir():
            raise ApprovalError(
                f"{source}: {folder} is no folder of approvers' keys; make it and put each approver's public "
                f"key in it as <identity>{PUBLIC_SUFFIX} (mlops keys init --dir DIR makes a pair)"
            )
        found: dict[str, Approver] = {}
        for path in sorted(folder.glob(f"*{PUBLIC_SUFFIX}")):
            identity = path.name[: -len(PUBLIC_SUFFIX)]
            if not IDENTITY.fullmatch(identity):
                raise ApprovalError(
                    f"{path}: {identity!r} is not an approver identity; name the file <user>{PUBLIC_SUFFIX} "
                    "(letters, digits, _ . @ -)"
                )
            try:
                approver = Approver(identity, public_key_id(path), path)
            except NotAPublicKey as exc:
                raise ApprovalError(f"{path} {exc}; give the approver's .pub") from exc
            if approver.key_id in found:
                raise ApprovalError(
                    f"{path} and {found[approver.key_id].public_key} hold the same key: one key names one person"
                )
            found[approver.key_id] = approver
        return cls(f"{source} {folder}", found)

    def known(self, key_id: str) -> Approver | None:
        """The trusted approver whose key has this id; None for a key nobody trusts."""
        return self.by_key_id.get(key_id)

    def identify(self, private_key: Path) -> Approver:
        """Who holds ``private_key``: the trusted approver whose public key is its pair; refused otherwise."""
        approver = self.known(private_key_id(private_key))
        if approver is None:
            raise ApprovalError(
                f"unknown approver key {private_key}: its public half is not among the trusted approvers "
                f"({self.source}); add it there as <identity>{PUBLIC_SUFFIX} first"
            )
        return approver


def private_key_id(private_key: Path) -> str:
    """The key id (:func:`mlops.governance.signing.fingerprint`) of a private key's public half."""
    from cryptography.hazmat.primitives import serialization

    from mlops.governance.signing import fingerprint

    path = Path(private_key).expanduser()
    if not path.is_file():
        raise ApprovalError(f"--key {path} does not exist; give your private approval key (PEM)")
    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except (ValueError, TypeError) as exc:
        raise ApprovalError(f"--key {path} is not an unencrypted PEM private key ({exc})") from exc
    return fingerprint(key.public_key())


def trusted_approvers(given: Path | None, workspace_root: Path | None) -> Approvers:
    """The approvers the user trusts: the folder given (``--approvers``), else ``MLOPS_APPROVERS``, else
    ``<workspace>/approvers``; never a key that came with the approval."""
    if given is not None:
        return Approvers.load(given, "--approvers")
    settings = ApproverSettings.from_env()
    if settings.approvers:
        return Approvers.load(Path(settings.approvers), settings.env_name("approvers"))
    if workspace_root is None:
        raise ApprovalError(
            f"no trusted approvers: set {settings.env_name('approvers')} to the folder of their public keys"
        )
    return Approvers.load(Path(workspace_root) / APPROVERS_DIR, "workspace approvers")
