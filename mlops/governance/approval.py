"""A second person's sign-off before production: the signed statement and every check it must pass.

With ``gate.require_approval`` on, a version whose gates all passed is not made champion: it waits as
``pending-approval`` until a trusted approver who neither trained nor registered it signs a statement
naming the exact version (its model digest and its signature reference). The statement is canonical
JSON signed with the approver's private key (ECDSA P-256, SHA-256); it is verified with the key the
verifier trusts for that approver (:mod:`mlops.governance.approvers`), never with a key that came with
it. Plain functions over a version's tags: the registry and the audit trail are the callers'.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from mlops.gates import PROMOTE
from mlops.governance.approvers import ApprovalError, Approvers
from mlops.vocabulary import (
    APPROVAL_AT_TAG,
    APPROVAL_BY_TAG,
    APPROVAL_KEY_ID_TAG,
    APPROVAL_REASON_TAG,
    APPROVAL_SIGNATURE_TAG,
    APPROVAL_STATEMENT_TAG,
    APPROVAL_STATUS_TAG,
    APPROVED,
    DECISION_TAG,
    DIGEST_TAG,
    PENDING_APPROVAL,
    REJECTED,
    SIGNATURE_URI_TAG,
    SIGNING_KEY_ID_TAG,
    clip,
)

__all__ = [
    "ApprovalError",
    "Statement",
    "approval_problem",
    "decision_problem",
    "pending_tags",
    "required",
    "sign",
    "signed_tags",
    "statement_for",
]

DECISIONS = (APPROVED, REJECTED)


@dataclass(frozen=True)
class Statement:
    """What an approver signs: this decision on this exact version, by this person, at this time."""

    model: str
    version: str
    model_digest: str
    """The version's ``mlops.onnx_sha256``: the bytes approved, not merely a version number."""
    signature_uri: str
    """The version's ``mlops.signature_uri``: the model signature the approval refers to."""
    decision: str
    """``approved`` or ``rejected``."""
    approver: str
    """The trusted approver's identity (from their key, :class:`mlops.governance.approvers.Approver`)."""
    approver_key_id: str
    at: str
    """UTC time of the decision, ISO 8601."""
    reason: str = ""

    def canonical(self) -> bytes:
        """The signed bytes: sorted keys, no spaces, UTF-8."""
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":")).encode()

    @classmethod
    def parse(cls, text: str) -> Statement:
        try:
            values = json.loads(text)
            return cls(**{key: str(values[key]) for key in cls.__dataclass_fields__})
        except (ValueError, TypeError, KeyError) as exc:
            raise ApprovalError(f"the approval statement on the version is not readable ({exc!r})") from exc


def statement_for(
    name: str,
    version: str,
    tags: Mapping[str, str],
    decision: str,
    approver: str,
    key_id: str,
    at: str,
    reason: str,
) -> Statement:
    """The statement for ``decision`` on the version whose tags are ``tags`` (its digest and signature)."""
    if decision not in DECISIONS:
        raise ApprovalError(f"decision {decision!r} is not one of {', '.join(DECISIONS)}")
    return Statement(
        name,
        version,
        tags.get(DIGEST_TAG, ""),
        tags.get(SIGNATURE_URI_TAG, ""),
        decision,
        approver,
        key_id,
        at,
        reason,
    )


def sign(statement: Statement, private_key: Path) -> str:
    """The approver's signature over the statement, base64 DER."""
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = serialization.load_pem_private_key(Path(private_key).expanduser().read_bytes(), password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ApprovalError(f"--key {private_key} is not an EC (P-256) private key")
    return base64.b64encode(key.sign(statement.canonical(), ec.ECDSA(hashes.SHA256()))).decode()


def verifies(statement: Statement, signature: str, public_key: Path) -> bool:
    """Whether ``signature`` is ``public_key``'s signature over the statement."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    try:
        raw = base64.b64decode(signature, validate=True)
    except (binascii.Error, ValueError):
        return False
    key = load_pem_public_key(public_key.read_bytes())
    if not isinstance(key, ec.EllipticCurvePublicKey):
        return False
    try:
        key.verify(raw, statement.canonical(), ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        return False
    return True


def pending_tags(at: str) -> dict[str, str]:
    """The tags of a version whose gates passed and which now waits for a second person."""
    return {APPROVAL_STATUS_TAG: PENDING_APPROVAL, APPROVAL_AT_TAG: at}


def signed_tags(statement: Statement, signature: str) -> dict[str, str]:
    """The tags that record a signed decision on the version."""
    return {
        APPROVAL_STATUS_TAG: statement.decision,
        APPROVAL_BY_TAG: statement.approver,
        APPROVAL_KEY_ID_TAG: statement.approver_key_id,
        APPROVAL_AT_TAG: statement.at,
        APPROVAL_REASON_TAG: clip(statement.reason),
        APPROVAL_STATEMENT_TAG: statement.canonical().decode(),
        APPROVAL_SIGNATURE_TAG: signature,
    }


def required(setting: bool, tags: Mapping[str, str]) -> bool:
    """Whether the version needs a valid approval to become champion: the setting is on, or the version
    was put under approval (it carries a status), so a later run with the setting off cannot skip it."""
    return setting or bool(tags.get(APPROVAL_STATUS_TAG))


def decision_problem(
    name: str,
    version: str,
    tags: Mapping[str, str],
    approver_identity: str,
    approver_key_id: str,
    creators: set[str],
) -> str:
    """Why this approver may not decide on this version now ('' when they may): it must be pending, have
    passed its gates, and the approver must be neither its creator nor the key that signed the model."""
    subject = f"{name}@{version}"
    status = tags.get(APPROVAL_STATUS_TAG, "")
    if status != PENDING_APPROVAL:
        return f"{subject} is not pending approval (approval status: {status or 'none'})"
    if tags.get(DECISION_TAG) != PROMOTE:
        return f"{subject} did not pass its gates (mlops.decision: {tags.get(DECISION_TAG) or 'none'})"
    if not tags.get(DIGEST_TAG):
        return f"{subject} carries no model digest ({DIGEST_TAG}): there are no exact bytes to approve"
    if approver_identity in creators:
        return (
            f"approver {approver_identity!r} is the creator of {subject} (it was trained/registered by "
            f"{', '.join(sorted(creators))}): a second person must approve"
        )
    if approver_key_id == tags.get(SIGNING_KEY_ID_TAG):
        return f"approver key {approver_key_id} is the key that signed the model of {subject}, not a person's"
    return ""


def approval_problem(
    name: str, version: str, tags: Mapping[str, str], creators: set[str], approvers: Approvers
) -> str:
    """What is missing for ``name@version`` to count as approved ('' when its approval holds): no approval,
    rejected, a statement about another version or other bytes, an approver nobody trusts, a signature that
    does not verify against the trusted approver's key, or an approver who created the version."""
    subject = f"{name}@{version}"
    status = tags.get(APPROVAL_STATUS_TAG, "")
    if status == PENDING_APPROVAL:
        return f"no approval: {subject} is pending approval; run `mlops approve {subject} --key KEY`"
    if status == REJECTED:
        return (
            f"{subject} was rejected by {tags.get(APPROVAL_BY_TAG) or '?'} at {tags.get(APPROVAL_AT_TAG) or '?'}: "
            f"{tags.get(APPROVAL_REASON_TAG) or 'no reason given'}"
        )
    if status != APPROVED:
        return f"no approval: {subject} carries none (approval status: {status or 'none'})"
    if tags.get(DECISION_TAG) != PROMOTE:
        return f"{subject} did not pass its gates (mlops.decision: {tags.get(DECISION_TAG) or 'none'})"
    try:
        statement = Statement.parse(tags.get(APPROVAL_STATEMENT_TAG, ""))
    except ApprovalError as exc:
        return f"{exc} ({subject})"
    expected = {
        "model": name,
        "version": version,
        "model_digest": tags.get(DIGEST_TAG, ""),
        "signature_uri": tags.get(SIGNATURE_URI_TAG, ""),
        "decision": APPROVED,
        "approver": tags.get(APPROVAL_BY_TAG, ""),
    }
    for key, value in expected.items():
        if getattr(statement, key) != value:
            return (
                f"the approval of {subject} does not match the version: its statement says {key} "
                f"{getattr(statement, key)!r}, the version {value!r}"
            )
    approver = approvers.known(statement.approver_key_id)
    if approver is None or approver.identity != statement.approver:
        return (
            f"the approval of {subject} is signed by an unknown approver key {statement.approver_key_id!r} "
            f"(as {statement.approver!r}); trusted approvers: {approvers.source}"
        )
    if not verifies(statement, tags.get(APPROVAL_SIGNATURE_TAG, ""), approver.public_key):
        return (
            f"the approval signature of {subject} does not verify against the trusted key of "
            f"{approver.identity!r} ({approver.public_key}): the approval was changed after signing"
        )
    if approver.identity in creators:
        return f"approver {approver.identity!r} is the creator of {subject}: a second person must approve"
    if approver.key_id == tags.get(SIGNING_KEY_ID_TAG):
        return f"approver key {approver.key_id} is the key that signed the model of {subject}, not a person's"
    return ""
