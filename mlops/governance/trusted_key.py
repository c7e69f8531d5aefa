"""Which public key a signed document must verify against: one the verifier holds, not the one shipped with it.

A signed folder (a model card, an evidence pack) ships its ``signing.pub`` so that openssl can
check it offline, but a signature by the shipped key proves only that *someone* signed the files:
whoever edits a report can re-sign the manifest with a fresh key and ship that key instead. So a
document is verified against a key the verifier trusts:

- ``--trusted-key PATH``: a public key file the verifier holds (the platform's ``signing.pub``);
- ``--key-id ID``: the platform's published key id; the shipped key is used only when its
  fingerprint is that id;
- by default the workspace's public key (``MLOPS_SIGNING_PUBLIC_KEY``, else
  ``<workspace>/keys/signing.pub``): the key this platform signs with;
- ``--trust-key-in-pack``: the shipped key, an explicit choice every report names, because it
  shows the files are unchanged since signing, not who signed them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

KEY_ID = re.compile(r"[0-9a-f]{16}")
"""A key id as :func:`mlops.governance.signing.key_id` writes it: 16 lower-case hex digits."""
TRUST_IN_PACK_OPTION = "--trust-key-in-pack"
TRUSTED_KEY_OPTION = "--trusted-key"
KEY_ID_OPTION = "--key-id"


class TrustError(ValueError):
    """No key to trust, or the one given is unusable; the message names the value and the fix."""


@dataclass(frozen=True)
class TrustedKey:
    """The key a signature must verify with, and where that trust comes from (for every report)."""

    source: str
    """Where the trust comes from, in words, e.g. ``workspace key /ws/keys/signing.pub``."""
    public_key: Path | None = None
    """A PEM public key file the verifier holds: signatures are checked with this key itself."""
    key_id: str = ""
    """A published key id, or the id of ``public_key``; empty only when the shipped key is trusted."""

    @property
    def in_pack(self) -> bool:
        """Whether the key shipped inside the verified document is trusted (no key of the verifier's)."""
        return self.public_key is None and not self.key_id

    @classmethod
    def from_file(cls, path: Path, source: str) -> TrustedKey:
        """The public key in ``path``; ``source`` says who named it (an option, a variable, the workspace)."""
        from mlops.governance.signing import NotAPublicKey, public_key_id

        path = Path(path).expanduser()
        if not path.is_file():
            raise TrustError(
                f"{source}: {path} does not exist; give the platform's public key file (signing.pub)"
            )
        try:
            found = public_key_id(path)
        except NotAPublicKey as exc:
            also = ", not its private key" if exc.unreadable else ""
            raise TrustError(f"{source}: {path} {exc}; give the platform's signing.pub{also}") from exc
        return cls(source=f"{source} {path}", public_key=path, key_id=found)

    @classmethod
    def pinned_id(cls, value: str) -> TrustedKey:
        if not KEY_ID.fullmatch(value):
            raise TrustError(
                f"{KEY_ID_OPTION} {value!r} is not a key id: it is 16 lower-case hex digits, as `mlops keys init` "
                "and the version's mlops.signing_key_id tag print it"
            )
        return cls(source=f"key id given with {KEY_ID_OPTION}", key_id=value)

    @classmethod
    def shipped(cls) -> TrustedKey:
        return cls(source=f"the key shipped inside ({TRUST_IN_PACK_OPTION})")


def choose(
    trusted_key: Path | None, key_id: str, trust_in_pack: bool, workspace_root: Path | None
) -> TrustedKey:
    """The key the user trusts: the one given (a file or an id), the shipped one when asked for,
    else the workspace's public key; with none of these, a :class:`TrustError` saying how to give one."""
    from mlops.governance.signing import SignatureError, SigningSettings

    given = [
        option
        for option, present in (
            (TRUSTED_KEY_OPTION, trusted_key is not None),
            (KEY_ID_OPTION, bool(key_id)),
            (TRUST_IN_PACK_OPTION, trust_in_pack),
        )
        if present
    ]
    if len(given) > 1:
        raise TrustError(f"give one of {', '.join(given)}: each names the key to trust")
    if trusted_key is not None:
        return TrustedKey.from_file(trusted_key, TRUSTED_KEY_OPTION)
    if key_id:
        return TrustedKey.pinned_id(key_id)
    if trust_in_pack:
        return TrustedKey.shipped()
    settings = SigningSettings.from_env()
    variable = settings.env_name("signing_public_key")
    try:
        path = settings.public_key(workspace_root)
    except SignatureError as exc:
        raise TrustError(
            f"no trusted key to verify against ({exc}). Give the platform's public key with "
            f"{TRUSTED_KEY_OPTION} PATH or its published id with {KEY_ID_OPTION} ID; {TRUST_IN_PACK_OPTION} "
            "accepts the key shipped inside, which proves only that the files are unchanged since someone signed them"
        ) from exc
    return TrustedKey.from_file(path, variable if settings.signing_public_key else "workspace key")
