"""The model-validation decision: one family failing of three rejects, and names only that family."""

import math

from components.model_validation.behavioural import BehaviouralResult
from components.model_validation.checks import Violation
from components.model_validation.explainability import ExplainabilityResult, Stability
from components.model_validation.fairness import AttributeFairness
from components.model_validation.gate_result import GATE
from components.model_validation.model_validation import decide
from mlops.gates import PROMOTE, REJECT

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
