"""The second person's approval, pinned at its edges: which decisions are allowed and which recorded
approvals hold (pure functions over a version's tags). Who may decide on which version (not the creator,
not the model's signing key, only a pending version that passed its gates), every reason a recorded
approval is refused (rejected, failed gates, a statement that does not match the version, tampered, signed
by another or an unknown key), and what people read of it in ``mlops history`` and the model card. The
approvers and the signed statement are in test_approval_approvers.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mlops.governance.approval import (
    Statement,
    approval_problem,
    decision_problem,
    pending_tags,
    sign,
    signed_tags,
    statement_for,
)
from mlops.governance.approvers import Approvers, private_key_id
from mlops.vocabulary import (
    APPROVAL_AT_TAG,
    APPROVAL_BY_TAG,
    APPROVAL_REASON_TAG,
    APPROVAL_SIGNATURE_TAG,
    APPROVAL_STATEMENT_TAG,
    APPROVAL_STATUS_TAG,
    DECISION_TAG,
    DIGEST_TAG,
    SIGNATURE_URI_TAG,
    SIGNING_KEY_ID_TAG,
)
from tests.mlops.approval_tags import AT, NAME, VERSION, approved, version_tags

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
