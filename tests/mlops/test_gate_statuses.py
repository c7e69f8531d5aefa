"""The gate decision's status: pass, fail or not conclusive, kept consistent and carried through combine."""

from __future__ import annotations

import pytest

from components.promotion_gate.combine import gate_decision, overall_tags
from mlops.gates import Decision, StatusBadge, combine, status_badge, status_word

UNDECIDED = (
    "sex equalized_odds_difference 0.0400 is within the max 0.1000, but its interval reaches across it",
)


def test_the_status_defaults_from_the_decision() -> None:
    assert Decision("metrics", "promote", "ok").status == "pass"
    assert Decision("metrics", "reject", "low").status == "fail"
    assert Decision("g", "promote", "listed", undecided=UNDECIDED).status == "not_conclusive"


@pytest.mark.parametrize(
    ("decision", "status", "undecided", "problem"),
    [
        ("reject", "pass", (), "status pass needs decision promote"),
        ("promote", "pass", UNDECIDED, "status pass needs decision promote and no undecided"),
        ("promote", "fail", (), "status fail with decision promote"),
        ("reject", "not_conclusive", (), "must name the undecided checks"),
        ("promote", "maybe", (), "has status 'maybe'"),
    ],
)
def test_an_inconsistent_status_is_refused(
    decision: str, status: str, undecided: tuple[str, ...], problem: str
) -> None:
    with pytest.raises(ValueError, match=problem):
        Decision("g", decision, "r", {}, status, undecided)


def test_the_verdict_json_round_trips_and_refuses_anything_else() -> None:
    held = Decision(
        "model_validation", "reject", "not conclusive: …", {"a": 0.5}, "not_conclusive", UNDECIDED
    )
    assert Decision.from_json(held.to_json()) == held
    with pytest.raises(ValueError, match="not a gate decision"):
        Decision.from_json('{"gate": "x"}')


def test_combine_a_pass_and_a_pass_is_a_plain_pass() -> None:
    both = combine([Decision("metrics", "promote", "ok"), Decision("model_validation", "promote", "ok")])
    assert (both.decision, both.status, both.reason) == (
        "promote",
        "pass",
        "all gates passed: metrics, model_validation",
    )


def test_combine_never_hides_an_undecided_check_behind_a_promote() -> None:
    listed = Decision(
        "model_validation", "promote", "passed as not conclusive", {}, "not_conclusive", UNDECIDED
    )
    both = combine([Decision("metrics", "promote", "ok"), listed])
    assert both.decision == "promote" and both.status == "not_conclusive"
    assert both.undecided == (f"model_validation: {UNDECIDED[0]}",)
    assert both.reason.startswith(
        "promoted with 1 check(s) not conclusive, let through by the model_validation gate's"
    )
    assert "all gates passed" not in both.reason


def test_combine_a_held_gate_is_not_conclusive_and_a_failed_one_fails() -> None:
    held = Decision("model_validation", "reject", "held", {}, "not_conclusive", UNDECIDED)
    verdict = combine([Decision("metrics", "promote", "ok"), held])
    assert (verdict.decision, verdict.status) == ("reject", "not_conclusive")
    assert verdict.reason == "model_validation gate: held"
    failed = combine([Decision("metrics", "reject", "auc low"), held])
    assert (failed.decision, failed.status) == ("reject", "fail")
    assert failed.undecided == (f"model_validation: {UNDECIDED[0]}",)


def test_the_combine_step_reads_the_verdict_and_refuses_a_mismatch() -> None:
    verdict = Decision("model_validation", "promote", "listed", {}, "not_conclusive", UNDECIDED).to_json()
    read = gate_decision("model_validation", "promote", "listed", verdict)
    assert read.status == "not_conclusive" and read.undecided == UNDECIDED
    assert gate_decision("model_validation", "reject", "x").status == "fail"  # no verdict: from the decision
    with pytest.raises(ValueError, match="returned 'reject' but its verdict says 'promote'"):
        gate_decision("model_validation", "reject", "listed", verdict)


def test_the_overall_tags_carry_status_and_undecided() -> None:
    listed = Decision("overall", "promote", "r", {}, "not_conclusive", ("a", "b"))
    assert overall_tags(listed) == {
        "mlops.decision": "promote",
        "mlops.status": "not_conclusive",
        "mlops.reason": "r",
        "mlops.undecided": "a\nb",
    }
    assert overall_tags(Decision("overall", "promote", "r"))["mlops.undecided"] == ""


def test_status_words() -> None:
    assert [status_word(s) for s in ("pass", "fail", "not_conclusive", "")] == [
        "pass",
        "fail",
        "not conclusive",
        "unknown",
    ]


@pytest.mark.parametrize(
    ("status", "loud_fail", "badge"),
    [
        ("pass", False, StatusBadge("pass", "pass")),
        ("fail", False, StatusBadge("fail", "fail")),
        ("fail", True, StatusBadge("fail", "FAIL")),
        ("pass", True, StatusBadge("pass", "pass")),
        ("not_conclusive", True, StatusBadge("not_conclusive", "not conclusive")),
        (None, False, StatusBadge("not_conclusive", "not recorded")),
        ("", True, StatusBadge("not_conclusive", "not recorded")),
        ("held", False, StatusBadge("not_conclusive", "held")),
        ("PASS", False, StatusBadge("not_conclusive", "PASS")),
    ],
)
def test_a_report_badge_is_green_or_red_only_for_a_decided_status(
    status: str | None, loud_fail: bool, badge: StatusBadge
) -> None:
    assert status_badge(status, loud_fail=loud_fail) == badge


def test_a_badge_writes_a_failure_plainly_unless_asked_to_shout() -> None:
    """The card shows ``fail`` as the other statuses are written; only the gate report asks for capitals."""
    assert status_badge("fail").text == "fail"
