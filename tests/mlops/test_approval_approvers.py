"""The second person's approval, pinned at its edges: who may approve and what they sign. The trusted
approvers (identified by the public half of their key, from the option, the environment or the workspace;
every folder, key and name they are refused for) and the signed statement (the exact bytes it names, its
canonical form, a signature that verifies only with the signer's key over the same statement). Which
approvals hold is in test_approval_decisions.py."""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path

import pytest

from mlops.governance.approval import Statement, pending_tags, required, sign, statement_for, verifies
from mlops.governance.approvers import (
    ApprovalError,
    Approvers,
    ApproverSettings,
    private_key_id,
    trusted_approvers,
)
from mlops.governance.signing import key_id
from mlops.vocabulary import (
    APPROVAL_AT_TAG,
    APPROVAL_BY_TAG,
    APPROVAL_KEY_ID_TAG,
    APPROVAL_REASON_TAG,
    APPROVAL_STATEMENT_TAG,
    APPROVAL_STATUS_TAG,
)
from tests.mlops.approval_tags import AT, NAME, VERSION, approved, version_tags

# --- the trusted approvers ---------------------------------------------------------------------


def test_an_approver_is_identified_by_the_public_half_of_their_key(
    people: dict[str, Path], approvers: Approvers
) -> None:
    alice = approvers.identify(people["alice"])
    assert alice.identity == "alice"
    assert alice.key_id == key_id(people["alice"].with_name("signing.pub"))
    assert approvers.identify(people["bob"]).identity == "bob"


def test_a_key_nobody_trusts_is_refused_as_unknown(people: dict[str, Path], approvers: Approvers) -> None:
    with pytest.raises(ApprovalError, match="unknown approver key"):
        approvers.identify(people["mallory"])


def test_a_missing_or_unreadable_private_key_is_named(tmp_path: Path) -> None:
    with pytest.raises(ApprovalError, match="does not exist"):
        private_key_id(tmp_path / "none.key")
    bad = tmp_path / "bad.key"
    bad.write_text("not a key")
    with pytest.raises(ApprovalError, match="not an unencrypted PEM private key"):
        private_key_id(bad)


def test_the_approvers_folder_must_exist_and_hold_public_keys(tmp_path: Path) -> None:
    with pytest.raises(ApprovalError, match="no folder of approvers' keys"):
        Approvers.load(tmp_path / "absent", "test")
    folder = tmp_path / "approvers"
    folder.mkdir()
    (folder / "eve.pub").write_text("garbage")
    with pytest.raises(ApprovalError, match="eve.pub is not a PEM public key"):
        Approvers.load(folder, "test")


def test_an_identity_must_be_a_plain_name(tmp_path: Path, people: dict[str, Path]) -> None:
    folder = tmp_path / "odd"
    folder.mkdir()
    shutil.copy(people["alice"].with_name("signing.pub"), folder / "-alice.pub")
    with pytest.raises(ApprovalError, match="is not an approver identity"):
        Approvers.load(folder, "test")


def test_one_key_names_one_person(tmp_path: Path, people: dict[str, Path]) -> None:
    folder = tmp_path / "twice"
    folder.mkdir()
    for name in ("alice", "alias"):
        shutil.copy(people["alice"].with_name("signing.pub"), folder / f"{name}.pub")
    with pytest.raises(ApprovalError, match="hold the same key"):
        Approvers.load(folder, "test")


def test_trust_comes_from_the_option_then_the_environment_then_the_workspace(
    tmp_path: Path, people: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ApproverSettings.env_name("approvers"), raising=False)
    assert trusted_approvers(people["approvers"], None).source.startswith("--approvers ")
    with pytest.raises(ApprovalError, match="no trusted approvers"):
        trusted_approvers(None, None)
    workspace = tmp_path / "ws"
    shutil.copytree(people["approvers"], workspace / "approvers")
    found = trusted_approvers(None, workspace)
    assert found.source.startswith("workspace approvers ")
    assert {a.identity for a in found.by_key_id.values()} == {"alice", "bob"}
    monkeypatch.setenv(ApproverSettings.env_name("approvers"), str(people["approvers"]))
    assert trusted_approvers(None, workspace).source.startswith("MLOPS_APPROVERS ")


# --- the statement and its signature ----------------------------------------------------------


def test_the_statement_names_the_exact_bytes_and_their_signature(people: dict[str, Path]) -> None:
    tags = version_tags(people)
    statement = statement_for(NAME, VERSION, tags, "approved", "alice", "k", AT, "fine")
    assert statement.model_digest == "ab" * 32
    assert statement.signature_uri == "runs:/r1/signature/model.sig"
    assert json.loads(statement.canonical()) == {
        "model": NAME,
        "version": VERSION,
        "model_digest": "ab" * 32,
        "signature_uri": "runs:/r1/signature/model.sig",
        "decision": "approved",
        "approver": "alice",
        "approver_key_id": "k",
        "at": AT,
        "reason": "fine",
    }
    assert Statement.parse(statement.canonical().decode()) == statement
    with pytest.raises(ApprovalError, match="not one of approved, rejected"):
        statement_for(NAME, VERSION, tags, "maybe", "alice", "k", AT, "")


def test_an_unreadable_statement_is_refused() -> None:
    for text in ("", "{", "[]", json.dumps({"model": NAME})):
        with pytest.raises(ApprovalError, match="not readable"):
            Statement.parse(text)


def test_a_signature_verifies_only_with_the_signers_key_over_the_same_statement(
    people: dict[str, Path],
) -> None:
    statement = statement_for(NAME, VERSION, version_tags(people), "approved", "alice", "k", AT, "")
    signature = sign(statement, people["alice"])
    alice_pub = people["alice"].with_name("signing.pub")
    assert verifies(statement, signature, alice_pub)
    assert not verifies(statement, signature, people["bob"].with_name("signing.pub"))
    assert not verifies(Statement(**{**statement.__dict__, "version": "8"}), signature, alice_pub)
    assert not verifies(statement, "not base64!", alice_pub)
    assert not verifies(statement, base64.b64encode(b"junk").decode(), alice_pub)


def test_the_recorded_tags_hold_the_whole_decision(people: dict[str, Path]) -> None:
    tags = approved(people)
    assert tags[APPROVAL_STATUS_TAG] == "approved"
    assert tags[APPROVAL_BY_TAG] == "alice"
    assert tags[APPROVAL_KEY_ID_TAG] == private_key_id(people["alice"])
    assert tags[APPROVAL_AT_TAG] == AT
    assert tags[APPROVAL_REASON_TAG] == "ok"
    assert json.loads(tags[APPROVAL_STATEMENT_TAG])["decision"] == "approved"
    assert pending_tags(AT) == {APPROVAL_STATUS_TAG: "pending-approval", APPROVAL_AT_TAG: AT}


def test_approval_is_required_by_the_setting_or_by_a_version_under_approval() -> None:
    assert not required(False, {})
    assert not required(False, {APPROVAL_STATUS_TAG: ""})
    assert required(True, {})
    assert required(False, {APPROVAL_STATUS_TAG: "pending-approval"})


# --- edges the mutation run found unpinned -----------------------------------------------------


def rsa_pair(tmp_path: Path) -> tuple[Path, Path]:
    """A key of the wrong kind (RSA): neither an approver's key nor a signing key."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private, public = tmp_path / "rsa.key", tmp_path / "rsa.pub"
    private.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    public.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return private, public


def test_the_signed_bytes_are_sorted_compact_json() -> None:
    statement = Statement(NAME, VERSION, "d", "s", "approved", "alice", "k", AT, "r")
    assert statement.canonical() == (
        b'{"approver":"alice","approver_key_id":"k","at":"2026-11-29T12:00:00+00:00","decision":"approved",'
        b'"model":"credit-default","model_digest":"d","reason":"r","signature_uri":"s","version":"7"}'
    )


def test_keys_of_the_wrong_kind_are_refused(tmp_path: Path, people: dict[str, Path]) -> None:
    private, public = rsa_pair(tmp_path)
    statement = statement_for(NAME, VERSION, version_tags(people), "approved", "alice", "k", AT, "")
    with pytest.raises(ApprovalError, match=r"rsa.key is not an EC \(P-256\) private key"):
        sign(statement, private)
    assert not verifies(statement, sign(statement, people["alice"]), public)
    folder = tmp_path / "rsa-approvers"
    folder.mkdir()
    shutil.copy(public, folder / "rob.pub")
    with pytest.raises(
        ApprovalError, match=r"rob.pub is not an EC \(P-256\) public key; give the approver's .pub"
    ):
        Approvers.load(folder, "test")


def test_a_signature_with_stray_characters_is_not_read_leniently(people: dict[str, Path]) -> None:
    statement = statement_for(NAME, VERSION, version_tags(people), "approved", "alice", "k", AT, "")
    signature = sign(statement, people["alice"])
    public = people["alice"].with_name("signing.pub")
    assert verifies(statement, signature, public)
    assert not verifies(statement, signature[:8] + "!" + signature[8:], public)


def test_the_identity_rule_is_named(tmp_path: Path, people: dict[str, Path]) -> None:
    folder = tmp_path / "odd-name"
    folder.mkdir()
    shutil.copy(people["alice"].with_name("signing.pub"), folder / "al ice.pub")
    with pytest.raises(ApprovalError, match=r"name the file <user>.pub \(letters, digits, _ \. @ -\)$"):
        Approvers.load(folder, "test")


def test_no_trusted_approvers_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ApproverSettings.env_name("approvers"), raising=False)
    with pytest.raises(ApprovalError, match="set MLOPS_APPROVERS to the folder of their public keys"):
        trusted_approvers(None, None)
