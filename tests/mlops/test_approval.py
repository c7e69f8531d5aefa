"""The second person's approval, pinned at its edges: the signed statement, the trusted approvers, and
every reason an approval is refused (pure functions over a version's tags)."""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path

import pytest

from mlops.governance.approval import (
    Statement,
    approval_problem,
    decision_problem,
    pending_tags,
    required,
    sign,
    signed_tags,
    statement_for,
    verifies,
)
from mlops.governance.approvers import (
    ApprovalError,
    Approvers,
    ApproverSettings,
    private_key_id,
    trusted_approvers,
)
from mlops.governance.signing import generate_key_pair, key_id
from mlops.vocabulary import (
    APPROVAL_AT_TAG,
    APPROVAL_BY_TAG,
    APPROVAL_KEY_ID_TAG,
    APPROVAL_REASON_TAG,
    APPROVAL_SIGNATURE_TAG,
    APPROVAL_STATEMENT_TAG,
    APPROVAL_STATUS_TAG,
    DECISION_TAG,
    DIGEST_TAG,
    SIGNATURE_URI_TAG,
    SIGNING_KEY_ID_TAG,
)

NAME, VERSION = "credit-default", "7"
AT = "2026-11-29T12:00:00+00:00"


@pytest.fixture
def people(tmp_path: Path) -> dict[str, Path]:
    """Private keys of alice, bob (trusted approvers), mallory (not trusted) and the platform's signing key."""
    keys: dict[str, Path] = {}
    trusted = tmp_path / "approvers"
    trusted.mkdir()
    for person in ("alice", "bob", "mallory", "platform"):
        private, public = generate_key_pair(tmp_path / "keys" / person)
        keys[person] = private
        if person in ("alice", "bob"):
            shutil.copy(public, trusted / f"{person}.pub")
    keys["approvers"] = trusted
    return keys


@pytest.fixture
def approvers(people: dict[str, Path]) -> Approvers:
    return Approvers.load(people["approvers"], "test")


def version_tags(people: dict[str, Path], **extra: str) -> dict[str, str]:
    platform_pub = people["platform"].with_name("signing.pub")
    return {
        DECISION_TAG: "promote",
        DIGEST_TAG: "ab" * 32,
        SIGNATURE_URI_TAG: "runs:/r1/signature/model.sig",
        SIGNING_KEY_ID_TAG: key_id(platform_pub),
        **pending_tags(AT),
        **extra,
    }


def approved(people: dict[str, Path], who: str = "alice", **changes: str) -> dict[str, str]:
    """The tags of the version after ``who`` approved it (``changes`` alter the statement before signing)."""
    tags = version_tags(people)
    statement = statement_for(NAME, VERSION, tags, "approved", who, private_key_id(people[who]), AT, "ok")
    statement = Statement(**{**statement.__dict__, **changes})
    # the status stays approved whatever the statement says: a rejection whose status tag was rewritten
    return {**tags, **signed_tags(statement, sign(statement, people[who])), APPROVAL_STATUS_TAG: "approved"}


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


# --- who may decide, on which version ---------------------------------------------------------


def test_a_different_approver_may_decide_on_a_pending_version_that_passed_its_gates(
    people: dict[str, Path],
) -> None:
    assert decision_problem(NAME, VERSION, version_tags(people), "alice", "k1", {"bob"}) == ""


def test_the_creator_may_not_approve_their_own_version(people: dict[str, Path]) -> None:
    problem = decision_problem(NAME, VERSION, version_tags(people), "alice", "k1", {"alice", "ci"})
    assert problem == (
        "approver 'alice' is the creator of credit-default@7 (it was trained/registered by alice, ci): "
        "a second person must approve"
    )


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({APPROVAL_STATUS_TAG: ""}, "is not pending approval (approval status: none)"),
        ({APPROVAL_STATUS_TAG: "approved"}, "is not pending approval (approval status: approved)"),
        ({APPROVAL_STATUS_TAG: "rejected"}, "is not pending approval (approval status: rejected)"),
        ({DECISION_TAG: "reject"}, "did not pass its gates (mlops.decision: reject)"),
        ({DECISION_TAG: ""}, "did not pass its gates (mlops.decision: none)"),
    ],
)
def test_only_a_pending_version_that_passed_its_gates_is_decided(
    people: dict[str, Path], change: dict[str, str], expected: str
) -> None:
    problem = decision_problem(NAME, VERSION, {**version_tags(people), **change}, "alice", "k1", set())
    assert problem == f"credit-default@7 {expected}"


def test_the_key_that_signed_the_model_is_no_approver(people: dict[str, Path]) -> None:
    tags = version_tags(people)
    problem = decision_problem(NAME, VERSION, tags, "alice", tags[SIGNING_KEY_ID_TAG], set())
    assert "is the key that signed the model of credit-default@7" in problem


# --- does a recorded approval hold ------------------------------------------------------------


def test_a_valid_approval_by_a_second_person_holds(people: dict[str, Path], approvers: Approvers) -> None:
    assert approval_problem(NAME, VERSION, approved(people), {"bob"}, approvers) == ""


def test_no_approval_at_all_is_named(people: dict[str, Path], approvers: Approvers) -> None:
    tags = version_tags(people)
    assert approval_problem(NAME, VERSION, tags, set(), approvers) == (
        "no approval: credit-default@7 is pending approval; run `mlops approve credit-default@7 --key KEY`"
    )
    del tags[APPROVAL_STATUS_TAG]
    assert approval_problem(NAME, VERSION, tags, set(), approvers) == (
        "no approval: credit-default@7 carries none (approval status: none)"
    )
    assert "approval status: maybe" in approval_problem(
        NAME, VERSION, {**tags, APPROVAL_STATUS_TAG: "maybe"}, set(), approvers
    )


def test_a_rejected_version_is_refused_naming_who_when_and_why(
    people: dict[str, Path], approvers: Approvers
) -> None:
    tags = {
        **version_tags(people),
        APPROVAL_STATUS_TAG: "rejected",
        APPROVAL_BY_TAG: "bob",
        APPROVAL_AT_TAG: AT,
        APPROVAL_REASON_TAG: "fairness gap",
    }
    assert approval_problem(NAME, VERSION, tags, set(), approvers) == (
        f"credit-default@7 was rejected by bob at {AT}: fairness gap"
    )
    bare = {**version_tags(people), APPROVAL_STATUS_TAG: "rejected"}
    del bare[APPROVAL_AT_TAG]
    assert approval_problem(NAME, VERSION, bare, set(), approvers) == (
        "credit-default@7 was rejected by ? at ?: no reason given"
    )


def test_an_approved_version_that_failed_its_gates_is_refused(
    people: dict[str, Path], approvers: Approvers
) -> None:
    tags = {**approved(people), DECISION_TAG: "reject"}
    assert approval_problem(NAME, VERSION, tags, set(), approvers) == (
        "credit-default@7 did not pass its gates (mlops.decision: reject)"
    )
    del tags[DECISION_TAG]
    assert "(mlops.decision: none)" in approval_problem(NAME, VERSION, tags, set(), approvers)


@pytest.mark.parametrize(
    ("tag", "value", "field"),
    [
        (DIGEST_TAG, "cd" * 32, "model_digest"),  # the model's bytes changed since the approval
        (SIGNATURE_URI_TAG, "runs:/other/signature/model.sig", "signature_uri"),
        (APPROVAL_BY_TAG, "bob", "approver"),  # the name on the version rewritten
    ],
)
def test_an_approval_that_does_not_match_the_version_is_refused(
    people: dict[str, Path], approvers: Approvers, tag: str, value: str, field: str
) -> None:
    tags = {**approved(people), tag: value}
    problem = approval_problem(NAME, VERSION, tags, set(), approvers)
    assert problem.startswith(
        f"the approval of credit-default@7 does not match the version: its statement says {field} "
    )
    assert problem.endswith(f", the version {value!r}")


@pytest.mark.parametrize(
    ("field", "value"),
    [("model", "other-model"), ("version", "8"), ("decision", "rejected")],
)
def test_an_approval_of_another_version_or_decision_is_refused(
    people: dict[str, Path], approvers: Approvers, field: str, value: str
) -> None:
    tags = approved(people, **{field: value})
    problem = approval_problem(NAME, VERSION, tags, set(), approvers)
    assert problem.startswith(
        f"the approval of credit-default@7 does not match the version: its statement says {field} {value!r}"
    )


def test_a_tampered_statement_is_refused(people: dict[str, Path], approvers: Approvers) -> None:
    tags = approved(people)
    statement = json.loads(tags[APPROVAL_STATEMENT_TAG])
    statement["reason"] = "approved without reading"  # edited after signing
    tags[APPROVAL_STATEMENT_TAG] = json.dumps(statement)
    problem = approval_problem(NAME, VERSION, tags, set(), approvers)
    assert problem.startswith(
        "the approval signature of credit-default@7 does not verify against the trusted key of 'alice'"
    )
    assert problem.endswith("the approval was changed after signing")


def test_a_signature_by_another_key_is_refused(people: dict[str, Path], approvers: Approvers) -> None:
    tags = approved(people)
    forged = Statement.parse(tags[APPROVAL_STATEMENT_TAG])
    tags[APPROVAL_SIGNATURE_TAG] = sign(forged, people["mallory"])  # claims alice's key, signed by mallory
    assert "does not verify against the trusted key of 'alice'" in approval_problem(
        NAME, VERSION, tags, set(), approvers
    )


def test_an_approval_by_a_key_nobody_trusts_is_refused(people: dict[str, Path], approvers: Approvers) -> None:
    tags = approved(people, who="mallory")
    assert approval_problem(NAME, VERSION, tags, set(), approvers) == (
        f"the approval of credit-default@7 is signed by an unknown approver key "
        f"{private_key_id(people['mallory'])!r} (as 'mallory'); trusted approvers: {approvers.source}"
    )


def test_an_approval_claiming_another_approvers_identity_is_refused(
    people: dict[str, Path], approvers: Approvers
) -> None:
    # bob signs with his own key but writes alice's name: the identity comes from the key, not the text
    tags = version_tags(people)
    statement = statement_for(NAME, VERSION, tags, "approved", "alice", private_key_id(people["bob"]), AT, "")
    tags = {**tags, **signed_tags(statement, sign(statement, people["bob"]))}
    assert "is signed by an unknown approver key" in approval_problem(NAME, VERSION, tags, set(), approvers)


def test_an_approval_by_the_creator_is_refused(people: dict[str, Path], approvers: Approvers) -> None:
    assert approval_problem(NAME, VERSION, approved(people), {"alice"}, approvers) == (
        "approver 'alice' is the creator of credit-default@7: a second person must approve"
    )


def test_an_approval_by_the_models_signing_key_is_refused(
    people: dict[str, Path], approvers: Approvers, tmp_path: Path
) -> None:
    folder = tmp_path / "with-platform"
    shutil.copytree(people["approvers"], folder)
    shutil.copy(people["platform"].with_name("signing.pub"), folder / "pipeline.pub")
    trusted = Approvers.load(folder, "test")
    tags = version_tags(people)
    statement = statement_for(
        NAME, VERSION, tags, "approved", "pipeline", private_key_id(people["platform"]), AT, ""
    )
    tags = {**tags, **signed_tags(statement, sign(statement, people["platform"]))}
    assert approval_problem(NAME, VERSION, tags, set(), trusted) == (
        f"approver key {private_key_id(people['platform'])} is the key that signed the model of credit-default@7, "
        "not a person's"
    )


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


def test_a_version_without_digest_or_signature_gives_empty_fields_and_cannot_be_decided() -> None:
    statement = statement_for(NAME, VERSION, {}, "rejected", "alice", "k", AT, "")
    assert (statement.model_digest, statement.signature_uri) == ("", "")
    tags = {DECISION_TAG: "promote", **pending_tags(AT)}
    assert decision_problem(NAME, VERSION, tags, "alice", "k", set()) == (
        "credit-default@7 carries no model digest (mlops.onnx_sha256): there are no exact bytes to approve"
    )


def test_a_missing_status_is_named_none() -> None:
    assert decision_problem(NAME, VERSION, {DECISION_TAG: "promote"}, "alice", "k", set()) == (
        "credit-default@7 is not pending approval (approval status: none)"
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


@pytest.mark.parametrize(
    ("tag", "field"),
    [(DIGEST_TAG, "model_digest"), (SIGNATURE_URI_TAG, "signature_uri"), (APPROVAL_BY_TAG, "approver")],
)
def test_an_approval_whose_version_lost_a_tag_is_refused(
    people: dict[str, Path], approvers: Approvers, tag: str, field: str
) -> None:
    tags = approved(people)
    del tags[tag]
    assert approval_problem(NAME, VERSION, tags, set(), approvers).endswith(
        f"its statement says {field} {json.loads(approved(people)[APPROVAL_STATEMENT_TAG])[field]!r}, the version ''"
    )


def test_an_approval_without_its_statement_or_signature_is_refused(
    people: dict[str, Path], approvers: Approvers
) -> None:
    tags = approved(people)
    del tags[APPROVAL_STATEMENT_TAG]
    assert approval_problem(NAME, VERSION, tags, set(), approvers) == (
        "the approval statement on the version is not readable "
        "(JSONDecodeError('Expecting value: line 1 column 1 (char 0)')) (credit-default@7)"
    )
    tags = approved(people)
    del tags[APPROVAL_SIGNATURE_TAG]
    assert "does not verify against the trusted key of 'alice'" in approval_problem(
        NAME, VERSION, tags, set(), approvers
    )


# --- what people read: mlops history and the model card ---------------------------------------


def test_history_and_the_card_show_who_approved_which_version_and_when() -> None:
    from mlops.data.card_fields import CardFields
    from mlops.governance.audit import AuditEvent
    from mlops.governance.card_html import render
    from mlops.governance.model_card import facts_document, model_card
    from mlops.governance.provenance import approval_lines, approvals
    from mlops.governance.version_facts import ModelFacts

    events = [
        AuditEvent(
            "approval.requested", f"{NAME}/7", {"status": "pending-approval"}, actor="ci", at="t0", seq=1
        ),
        AuditEvent(
            "approval.approved",
            f"{NAME}/7",
            {"approver": "alice", "approver_key_id": "k1", "at": AT, "reason": "read the card"},
            actor="alice",
            at="t1",
            seq=2,
        ),
        AuditEvent(
            "approval.rejected",
            f"{NAME}/6",
            {"approver": "bob", "reason": "gap"},
            actor="bob",
            at="t2",
            seq=3,
        ),
        AuditEvent("approval.approved", "other/7", {"approver": "eve"}, actor="eve", at="t3", seq=4),
        AuditEvent(
            "alias.moved", f"{NAME}/7", {"alias": "champion", "to": "7"}, actor="alice", at="t4", seq=5
        ),
    ]
    rows = approvals(NAME, events)
    assert [(r["version"], r["decision"], r["by"], r["at"]) for r in rows] == [
        ("7", "requested", "ci", "t0"),
        ("7", "approved", "alice", AT),
        ("6", "rejected", "bob", "t2"),
    ]
    assert rows[1]["key_id"] == "k1" and rows[1]["reason"] == "read the card" and rows[1]["audit_seq"] == "2"
    lines = approval_lines(NAME, events)
    assert lines[1].split() == ["version", "approval", "at", "by", "why"]
    assert (
        lines[3].startswith("7        approved   2026-11-29T12:00:00+00:00")
        and "alice (key k1) read the card" in lines[3]
    )
    assert lines[4].split()[:2] == ["6", "rejected"] and lines[4].endswith("bob          gap")
    assert approval_lines(NAME, events[3:]) == []
    facts = ModelFacts(NAME, "champion", "7", ["champion"], "2026-01-01", "", {}, [], {}, events[:2], events)
    document = facts_document(facts, CardFields(), "schema.yaml")
    assert [a["decision"] for a in document["approvals"]] == ["requested", "approved"]
    page = render(model_card(facts, CardFields()), document)
    assert "<h2>Approval</h2>" in page and "read the card" in page and "alice" in page
