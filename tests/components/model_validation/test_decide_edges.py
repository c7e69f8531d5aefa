"""The model-validation decision: one family failing of three rejects, and names only that family."""

import math

import pytest

from components.model_validation.behavioural import BehaviouralResult
from components.model_validation.checks import Violation
from components.model_validation.explainability import ExplainabilityResult, Stability
from components.model_validation.fairness import AttributeFairness
from components.model_validation.gate_result import GATE
from components.model_validation.validation_gate import POLICY_ADDRESS, _decide, decide, holding
from mlops.gates import FAIL, NOT_CONCLUSIVE, PASS, PROMOTE, REJECT

UNFAIR = Violation("fairness", "sex", "demographic_parity_difference", 0.25, 0.125, "max", "a vs b")
WRONG_WAY = Violation("behavioural", "directional:x:+1:non_decreasing", "pass_fraction", 0.5, 0.75, "min")
UNSTABLE = Violation("explainability", "attributions", "rank_agreement_spearman", 0.25, 0.5, "min")


def fairness(attribute: str, *violations: Violation, notes: tuple[str, ...] = ()) -> AttributeFairness:
    return AttributeFairness(attribute, (), ("a", "b"), 0.125, 0.75, 0.0625, {}, notes, violations)


def behaviour(name: str, *violations: Violation) -> BehaviouralResult:
    return BehaviouralResult(name, "directional", "x", 8, 0.0625, 0.125, 0.25, 0.875, violations)


def explained(*violations: Violation, spearman: float = 0.875) -> ExplainabilityResult:
    return ExplainabilityResult("method", 40, (), (), Stability(spearman, 0.75, 3, 0.5, 20), violations)


def test_all_families_passing_promote_with_each_reason() -> None:
    decisions = decide([fairness("sex"), fairness("age")], explained(), [behaviour("t1"), behaviour("t2")])
    assert set(decisions) == {"fairness", "behavioural", "explainability", GATE}
    assert all(d.decision == PROMOTE for d in decisions.values())
    assert decisions["fairness"].reason == "fairness thresholds met for protected attribute(s): sex, age"
    assert decisions["behavioural"].reason == "all 2 behavioural test(s) passed"
    assert (
        decisions["explainability"].reason
        == "attribution ranking stable: Spearman 0.875 across two halves of 20 rows"
    )
    assert decisions[GATE].reason == "; ".join(
        decisions[k].reason for k in ("fairness", "behavioural", "explainability")
    )
    assert {d.gate for d in decisions.values()} == {"fairness", "behavioural", "explainability", GATE}


def test_one_unfair_attribute_of_two_rejects_fairness_and_the_gate_only() -> None:
    decisions = decide([fairness("sex", UNFAIR), fairness("age")], explained(), [behaviour("t1")])
    assert decisions["fairness"].decision == REJECT
    assert decisions["fairness"].gate == "fairness"
    assert decisions["fairness"].reason == UNFAIR.message
    assert decisions["fairness"].metrics["sex.demographic_parity_difference"] == 0.125
    assert decisions["behavioural"].promote and decisions["explainability"].promote
    assert decisions[GATE].decision == REJECT
    assert decisions[GATE].gate == GATE
    assert decisions[GATE].reason == UNFAIR.message
    assert decisions[GATE].metrics["fairness.age.demographic_parity_ratio"] == 0.75


def test_one_failing_behavioural_test_of_three_rejects() -> None:
    decisions = decide(
        [fairness("sex")], explained(), [behaviour("t1"), behaviour("t2", WRONG_WAY), behaviour("t3")]
    )
    assert not decisions["behavioural"].promote and decisions["fairness"].promote
    assert decisions[GATE].reason == WRONG_WAY.message


def test_an_unstable_ranking_alone_rejects() -> None:
    decisions = decide([fairness("sex")], explained(UNSTABLE), [behaviour("t1")])
    assert not decisions["explainability"].promote
    assert not decisions[GATE].promote and decisions[GATE].reason == UNSTABLE.message


def test_every_family_failing_names_every_violation() -> None:
    decisions = decide([fairness("sex", UNFAIR)], explained(UNSTABLE), [behaviour("t1", WRONG_WAY)])
    assert decisions[GATE].reason == "; ".join(v.message for v in (UNFAIR, WRONG_WAY, UNSTABLE))


def test_fairness_notes_travel_with_a_passing_reason() -> None:
    decisions = decide([fairness("sex", notes=("group 'x' too small", "ratio taken as 1"))], explained(), [])
    assert decisions["fairness"].reason == (
        "fairness thresholds met for protected attribute(s): sex [notes: sex: group 'x' too small; sex: ratio taken as 1]"
    )


def test_no_attributes_and_a_disabled_stability_check_are_said_so() -> None:
    decisions = decide([], explained(spearman=math.nan), [], stability_checked=False)
    assert (
        decisions["fairness"].reason == "fairness thresholds met for protected attribute(s): none configured"
    )
    assert decisions["explainability"].reason.startswith(
        "attribution ranking not checked (disabled): Spearman nan"
    )
    assert decisions[GATE].promote


def test_decision_metrics_are_the_measured_figures_per_family() -> None:
    decisions = decide([fairness("sex")], explained(), [behaviour("t1")])
    assert decisions["fairness"].metrics == {
        "sex.demographic_parity_difference": 0.125,
        "sex.demographic_parity_ratio": 0.75,
        "sex.equalized_odds_difference": 0.0625,
    }
    assert decisions["behavioural"].metrics == {"t1.pass_fraction": 0.875, "t1.mean_abs_change": 0.125}
    assert decisions["explainability"].metrics == {"rank_agreement_spearman": 0.875, "top_k_overlap": 0.5}
    assert decisions[GATE].metrics["fairness.sex.demographic_parity_ratio"] == 0.75
    assert decisions[GATE].metrics["explainability.top_k_overlap"] == 0.5
    assert len(decisions[GATE].metrics) == 7


def test_two_violations_of_one_family_are_joined_in_its_reason() -> None:
    second = Violation("fairness", "age", "equalized_odds_difference", 0.5, 0.25, "max")
    decisions = decide([fairness("sex", UNFAIR), fairness("age", second)], explained(), [])
    assert decisions["fairness"].reason == f"{UNFAIR.message}; {second.message}"


def test_a_violation_fails_and_still_names_the_undecided_checks() -> None:
    made = _decide("fairness", [UNFAIR], "ok", {"m": 1.0}, " (note)", undecided=["age: 3 rows"])
    assert (made.decision, made.status, made.undecided) == (REJECT, FAIL, ("age: 3 rows",))
    assert made.reason == UNFAIR.message + " (note)" and made.metrics == {"m": 1.0}


def test_undecided_checks_the_policy_lets_through_promote_as_not_conclusive() -> None:
    made = _decide("fairness", [], "ok", {}, " (note)", undecided=["age: 3 rows", "sex: 5 rows"])
    assert (made.decision, made.status, made.undecided) == (
        PROMOTE,
        NOT_CONCLUSIVE,
        ("age: 3 rows", "sex: 5 rows"),
    )
    assert made.reason == (
        f"not conclusive: age: 3 rows; sex: 5 rows; passed as not conclusive, listed ({POLICY_ADDRESS} lets them "
        "through) (note)"
    )


def test_undecided_checks_the_policy_holds_reject_as_not_conclusive_and_count_them() -> None:
    made = _decide(
        "fairness", [], "ok", {}, undecided=["age: 3 rows", "sex: 5 rows"], holding=["sex: 5 rows"]
    )
    assert (made.decision, made.status) == (REJECT, NOT_CONCLUSIVE)
    assert made.reason == (
        f"not conclusive: age: 3 rows; sex: 5 rows; not promoted: 1 of them may not pass undecided under "
        f"{POLICY_ADDRESS} (test on more rows to decide them, or change the setting)"
    )


def test_nothing_undecided_and_no_violation_passes_with_its_sentence() -> None:
    made = _decide("fairness", [], "all fair", {"m": 0.5}, " (note)")
    assert (made.decision, made.status, made.reason, made.undecided) == (PROMOTE, PASS, "all fair (note)", ())


@pytest.mark.parametrize(
    ("policy", "held"),
    [
        ("always", []),
        ("estimate_within_limit", ["sex dp: beyond"]),
        ("never", ["sex dp: within", "sex dp: beyond"]),
    ],
)
def test_which_undecided_checks_hold_the_model_back_under_each_policy(policy: str, held: list[str]) -> None:
    from dataclasses import replace

    attribute = replace(
        fairness("sex"), undecided=("sex dp: within", "sex dp: beyond"), undecided_outside=("sex dp: beyond",)
    )
    assert holding([attribute], policy) == held


def test_an_unknown_policy_is_refused_with_the_ones_there_are() -> None:
    with pytest.raises(
        ValueError,
        match=r"^pass_not_conclusive 'sometimes': expected never, estimate_within_limit or always$",
    ):
        holding([fairness("sex")], "sometimes")
