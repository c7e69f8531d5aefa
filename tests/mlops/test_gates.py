"""The gate decision type and ``combine``: one rejecting gate of several rejects the whole."""

import json

import numpy as np
import pytest

from mlops.gates import FAIL, NOT_CONCLUSIVE, OVERALL, PASS, PROMOTE, REJECT, Decision, combine


def _promote(gate: str) -> Decision:
    return Decision(gate, PROMOTE, f"{gate} ok", {f"{gate}.value": 1.0})


def _reject(gate: str, why: str) -> Decision:
    return Decision(gate, REJECT, why, {})


def test_every_gate_promoting_promotes_and_names_every_gate() -> None:
    verdict = combine([_promote("metrics"), _promote("model_validation"), _promote("int8")])
    assert verdict.decision == PROMOTE
    assert verdict.gate == OVERALL
    assert verdict.reason == "all gates passed: metrics, model_validation, int8"
    assert verdict.metrics == {}


def test_one_rejecting_gate_of_three_rejects_naming_only_that_gate_and_its_reason() -> None:
    verdict = combine(
        [_promote("metrics"), _reject("model_validation", "sex: dpd 0.2 > max 0.1"), _promote("int8")]
    )
    assert verdict.decision == REJECT
    assert verdict.gate == OVERALL
    assert verdict.reason == "model_validation gate: sex: dpd 0.2 > max 0.1"
    assert verdict.metrics == {}


def test_the_last_gate_rejecting_alone_still_rejects() -> None:
    verdict = combine([_promote("metrics"), _promote("model_validation"), _reject("int8", "drop")])
    assert not verdict.promote
    assert verdict.reason == "int8 gate: drop"


def test_several_rejecting_gates_are_all_named_in_order() -> None:
    verdict = combine(
        [_reject("metrics", "auc low"), _promote("int8"), _reject("model_validation", "unfair")]
    )
    assert verdict.reason == "metrics gate: auc low; model_validation gate: unfair"


def test_a_single_promoting_gate_promotes() -> None:
    assert combine([_promote("metrics")]).promote


def test_combine_without_decisions_is_an_error() -> None:
    with pytest.raises(ValueError, match="^combine needs at least one gate decision$"):
        combine([])


def test_a_decision_must_be_promote_or_reject() -> None:
    with pytest.raises(
        ValueError, match=r"gate 'metrics' returned \['accept'\]; expected 'promote' or 'reject'"
    ):
        Decision("metrics", "accept", "why")


def test_promote_property_reads_the_decision() -> None:
    assert _promote("metrics").promote is True
    assert _reject("metrics", "no").promote is False


def _undecided(gate: str, decision: str, check: str) -> Decision:
    return Decision(gate, decision, f"{gate}: {check} undecided", {}, NOT_CONCLUSIVE, (check,))


def test_a_rejection_with_a_failed_gate_fails_and_keeps_every_undecided_check() -> None:
    verdict = combine(
        [_undecided("fairness", PROMOTE, "sex: 12 rows"), _reject("metrics", "auc low"), _promote("int8")]
    )
    assert (verdict.gate, verdict.decision, verdict.status) == (OVERALL, REJECT, FAIL)
    assert verdict.undecided == ("fairness: sex: 12 rows",)
    assert verdict.reason == "metrics gate: auc low"
    assert verdict.metrics == {}


def test_a_rejection_only_for_undecided_checks_is_not_conclusive_not_failed() -> None:
    verdict = combine([_promote("metrics"), _undecided("fairness", REJECT, "age: 3 rows")])
    assert (verdict.decision, verdict.status) == (REJECT, NOT_CONCLUSIVE)
    assert verdict.undecided == ("fairness: age: 3 rows",)
    assert verdict.reason == "fairness gate: fairness: age: 3 rows undecided"


def test_a_promotion_past_undecided_checks_names_them_and_the_gates_that_let_them_through() -> None:
    verdict = combine(
        [
            _undecided("fairness", PROMOTE, "sex: 12 rows"),
            _promote("metrics"),
            _undecided("int8", PROMOTE, "drift"),
        ]
    )
    assert (verdict.gate, verdict.decision, verdict.status) == (OVERALL, PROMOTE, NOT_CONCLUSIVE)
    assert verdict.undecided == ("fairness: sex: 12 rows", "int8: drift")
    assert verdict.reason == (
        "promoted with 2 check(s) not conclusive, let through by the fairness, int8 gate's policy "
        "(gates fairness, metrics, int8): fairness: sex: 12 rows; int8: drift"
    )
    assert verdict.metrics == {}


def test_every_gate_passing_is_a_pass_without_undecided_checks() -> None:
    verdict = combine([_promote("metrics"), _promote("int8")])
    assert (verdict.status, verdict.undecided, verdict.metrics) == (PASS, (), {})


@pytest.mark.parametrize(
    ("decision", "undecided", "status"),
    [(PROMOTE, (), PASS), (REJECT, (), FAIL), (PROMOTE, ("x",), NOT_CONCLUSIVE), (REJECT, ("x",), FAIL)],
)
def test_an_empty_status_is_derived_from_the_decision_and_the_undecided_checks(
    decision: str, undecided: tuple[str, ...], status: str
) -> None:
    assert Decision("g", decision, "why", {}, "", undecided).status == status


@pytest.mark.parametrize(
    ("decision", "status", "undecided", "message"),
    [
        (PROMOTE, "maybe", (), r"gate 'g' has status 'maybe'; expected one of"),
        (REJECT, PASS, (), r"gate 'g': status pass needs decision promote and no undecided checks"),
        (PROMOTE, PASS, ("x",), r"gate 'g': status pass needs decision promote and no undecided checks"),
        (PROMOTE, FAIL, (), r"gate 'g': status fail with decision promote; a failed check rejects"),
        (PROMOTE, NOT_CONCLUSIVE, (), r"gate 'g': status not_conclusive must name the undecided checks"),
    ],
)
def test_an_inconsistent_status_is_refused_by_name(
    decision: str, status: str, undecided: tuple[str, ...], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        Decision("g", decision, "why", {}, status, undecided)


def test_undecided_checks_are_kept_as_a_tuple_and_read_back_from_json() -> None:
    made = Decision("g", PROMOTE, "why", {"m": 1.0}, NOT_CONCLUSIVE, ["a", "b"])  # type: ignore[arg-type]
    assert made.undecided == ("a", "b") and made.passed_undecided
    assert Decision.from_json(made.to_json()) == made
    assert not _promote("g").passed_undecided and not _undecided("g", REJECT, "a").passed_undecided


def test_the_json_round_trip_keeps_a_status_the_decision_alone_would_not_give() -> None:
    held = Decision("fairness", REJECT, "held", {"m": 0.5}, NOT_CONCLUSIVE, ("age: 3 rows",))
    assert Decision.from_json(held.to_json()) == held  # derived from the decision it would read fail
    assert Decision.from_json(json.loads(held.to_json())) == held  # a mapping is read as well as text
    bare = {"gate": "g", "decision": REJECT, "reason": "why"}  # an older writer: no status, no undecided
    assert Decision.from_json(bare) == Decision("g", REJECT, "why", {}, FAIL, ())


def test_to_json_writes_numpy_figures_as_numbers_and_refuses_nan() -> None:
    made = Decision("g", PROMOTE, "why", {"auc": np.float32(0.5)})  # type: ignore[dict-item]
    assert Decision.from_json(made.to_json()).metrics == {"auc": 0.5}
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        Decision("g", PROMOTE, "why", {"auc": float("nan")}).to_json()


def test_text_that_is_no_decision_is_refused_showing_its_first_200_characters() -> None:
    text = "x" * 300
    with pytest.raises(ValueError) as refused:
        Decision.from_json(text)
    assert str(refused.value).startswith("not a gate decision (") and str(refused.value).endswith(
        repr("x" * 200)
    )
