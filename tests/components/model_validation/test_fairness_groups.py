"""Fairness per group and attribute: one deviating group of several, ``min_group_size`` and the minimum
positives and negatives in each rate's denominator at their edges (a group too small is reported, not
decided on, and the gate's reason names it), the per-group rates (undefined ones noted, not zero), one
unfair attribute of several, missing protected values as their own group, and the inputs refused. The
limits themselves are in test_fairness_limits.py; gating on intervals in test_fairness_intervals.py.

Groups are built from exact confusion-matrix counts over 32 rows (fairness_groups.py), so every rate is a
multiple of 1/32 and every difference and ratio the gate compares is exact.
"""

import math

import numpy as np
import pytest

from components.model_validation.config import FairnessPolicy
from components.model_validation.fairness import evaluate_fairness, protected_groups
from components.model_validation.fairness_notes import rate_spread
from components.model_validation.group_bins import MISSING_GROUP
from tests.components.model_validation.fairness_groups import A, B, below, check, policy, spread
from tests.support.gate_inputs import confusion_group, scored_groups

# --- one group of several; min group size at its edge ---


def test_one_deviating_group_of_three_is_found_and_named() -> None:
    groups = {"a": A, "b": A, "c": B}
    (violation,) = check(groups, policy(max_demographic_parity_difference=0.1)).violations
    assert spread(violation) == "selection rate a 0.5000 vs c 0.3750"


def test_a_group_of_exactly_min_group_size_is_checked() -> None:
    groups = {"a": A, "b": B}
    result = check(groups, policy(min_group_size=32, max_demographic_parity_difference=0.1))
    assert result.checked_groups == ("a", "b")
    assert not any(g.too_small for g in result.groups)
    assert [v.metric for v in result.violations] == ["demographic_parity_difference"]


def test_a_group_one_row_short_of_min_group_size_is_reported_but_not_checked() -> None:
    small = confusion_group(tp=0, fn=0, fp=0, tn=31)  # would break every limit if it were checked
    result = check(
        {"a": A, "b": A, "small": small}, policy(min_group_size=32, max_demographic_parity_difference=0.1)
    )
    assert result.violations == ()
    assert result.checked_groups == ("a", "b")
    small_metrics = next(g for g in result.groups if g.group == "small")
    assert small_metrics.too_small and small_metrics.size == 31 and small_metrics.selection_rate == 0.0
    assert (
        "group 'small' has 31 rows < min_group_size 32, 0 positives < min_group_positives 1: its selection "
        "and favourable rates and TPR are not decided on (reported only)"
    ) in result.notes


def test_fewer_than_two_checked_groups_decides_no_parity_and_says_so() -> None:
    result = check({"a": A, "b": confusion_group(0, 0, 0, 31)}, policy(max_demographic_parity_difference=0.0))
    assert result.violations == ()
    assert result.checked_groups == ("a",)
    assert math.isnan(result.demographic_parity_difference)
    assert math.isnan(result.demographic_parity_ratio)
    assert "demographic_parity_difference" not in result.intervals
    assert (
        "1 group(s) of at least 32 rows (min_group_size): nothing to compare, so demographic parity was not "
        "decided on for this attribute"
    ) in result.notes
    # b's 31 negatives are enough for its FPR: equalised odds rests on its own denominators (0.5 vs 0).
    assert result.equalized_odds_difference == 0.5
    assert result.decided_groups["false_positive_rate"] == ("a", "b")


def test_a_score_exactly_at_the_decision_threshold_is_a_positive_prediction() -> None:
    at_threshold = ([1] * 16 + [0] * 16, [0.5] * 32)
    below_threshold = ([1] * 16 + [0] * 16, [below(0.5)] * 32)
    result = check({"a": at_threshold, "b": below_threshold}, policy())
    rates = {g.group: g for g in result.groups}
    assert rates["a"].selection_rate == 1.0 and rates["b"].selection_rate == 0.0
    assert rates["a"].true_positive_rate == 1.0 and rates["a"].false_positive_rate == 1.0
    assert rates["a"].favourable_rate == 0.0 and rates["b"].favourable_rate == 1.0
    assert result.demographic_parity_difference == 1.0


def test_per_group_metrics_are_the_constructed_rates() -> None:
    result = check({"a": confusion_group(12, 4, 4, 12), "b": B}, policy())
    a = next(g for g in result.groups if g.group == "a")
    assert (a.size, a.positives, a.base_rate) == (32, 16, 0.5)
    assert (a.selection_rate, a.favourable_rate) == (0.5, 0.5)
    assert (a.true_positive_rate, a.false_positive_rate, a.precision) == (0.75, 0.25, 0.75)
    assert a.auc == 0.75
    assert a.notes == ()


def test_undefined_group_metrics_are_noted_not_zero() -> None:
    no_positives_none_predicted = confusion_group(0, 0, 0, 32)
    result = check({"a": A, "b": no_positives_none_predicted}, policy())
    b = next(g for g in result.groups if g.group == "b")
    assert math.isnan(b.true_positive_rate) and math.isnan(b.precision) and math.isnan(b.auc)
    assert b.notes == (
        "AUC undefined: the group has only one label class",
        "TPR undefined: no positive labels",
        "precision undefined: no predicted positives",
    )
    only_positives = confusion_group(16, 16, 0, 0)
    c = next(g for g in check({"a": A, "c": only_positives}, policy()).groups if g.group == "c")
    assert "FPR undefined: no negative labels" in c.notes


# --- one attribute of several ---


def test_one_unfair_attribute_of_two_is_the_only_one_with_violations() -> None:
    frame, scores = scored_groups({"a": A, "b": B})
    frame["region"] = ["north", "south"] * 32  # both regions get the same mix of predictions
    fair_region, unfair_g = reversed(
        evaluate_fairness(frame, scores, "y", ["g", "region"], policy(max_demographic_parity_difference=0.1))
    )
    assert fair_region.attribute == "region" and fair_region.violations == ()
    assert unfair_g.attribute == "g" and [v.subject for v in unfair_g.violations] == ["g"]


def test_missing_protected_values_form_their_own_visible_group() -> None:
    frame, scores = scored_groups({"a": A, "b": A})
    frame["g"] = frame["g"].where(frame["g"] == "a", None)
    assert list(np.unique(protected_groups(frame, "g"))) == [MISSING_GROUP, "a"]
    (result,) = evaluate_fairness(frame, scores, "y", ["g"], policy())
    assert {g.group for g in result.groups} == {"a", MISSING_GROUP}


def test_scores_must_cover_every_row() -> None:
    frame, scores = scored_groups({"a": A, "b": B})
    with pytest.raises(ValueError, match="got 63 scores for 64 rows; score every row of the frame"):
        evaluate_fairness(frame, scores[:-1], "y", ["g"], policy())


def test_missing_label_column_is_a_clear_error() -> None:
    frame, scores = scored_groups({"a": A, "b": B})
    with pytest.raises(
        ValueError, match=r"label column 'default' not in the test data; available columns: \['g', 'y'\]"
    ):
        evaluate_fairness(frame, scores, "default", ["g"], policy())


# --- rates of single groups; an attribute with one checked group ---


def test_positives_precision_and_auc_of_an_unbalanced_group() -> None:
    # 12 positives of 32; one positive scored highest: AUC defined with a single positive too.
    one_positive = ([1] + [0] * 31, [0.875] + [0.25] * 31)
    result = check({"a": confusion_group(9, 3, 4, 16), "b": one_positive}, policy())
    a, b = sorted(result.groups, key=lambda g: g.group)
    assert (a.positives, a.base_rate, a.precision) == (12, 12 / 32, 9 / 13)
    assert (b.positives, b.auc, b.precision) == (1, 1.0, 1.0)


def test_precision_counts_a_score_at_the_threshold_as_predicted_positive() -> None:
    at_threshold = ([1] * 16 + [0] * 16, [0.5] * 32)
    (a,) = (g for g in check({"a": at_threshold, "b": A}, policy()).groups if g.group == "a")
    assert a.precision == 0.5


def test_spread_of_a_metric_no_group_defines_is_empty() -> None:
    assert rate_spread({"a": math.nan, "b": math.nan}, "true_positive_rate") == ""
    assert rate_spread({"a": 0.25, "b": math.nan, "c": 0.75}, "true_positive_rate") == (
        "true positive rate c 0.7500 vs a 0.2500"
    )


def test_an_attribute_with_one_checked_group_still_reports_its_groups() -> None:
    result = check({"a": A, "b": confusion_group(0, 0, 0, 31)}, policy())
    assert result.attribute == "g"
    assert [g.group for g in result.groups] == ["a", "b"]
    assert set(result.intervals) == {"equalized_odds_difference"}  # parity has one group, odds two


def test_a_missing_protected_attribute_is_a_clear_error() -> None:
    frame, scores = scored_groups({"a": A, "b": B})
    with pytest.raises(
        ValueError,
        match=r"^protected attribute\(s\) \['sex'\] not in the test data; available columns: \['g', 'y'\]\. "
        r"Fix protected_attributes or keep the column in the test split\.$",
    ):
        evaluate_fairness(frame, scores, "y", ["g", "sex"], policy())


# --- the minimum counted in each rate's denominator: rows, positives, negatives ---------------------

TPR_ONE = confusion_group(tp=30, fn=0, fp=0, tn=30)  # TPR 1, FPR 0


def _tpr_zero(positives: int) -> tuple[list[int], list[float]]:
    return confusion_group(tp=0, fn=positives, fp=0, tn=30)  # TPR 0, FPR 0


def _odds_policy(**overrides: float) -> FairnessPolicy:
    return policy(min_group_size=1, max_equalized_odds_difference=0.5, **overrides)


def test_a_group_with_exactly_min_group_positives_has_its_tpr_decided_on() -> None:
    result = check({"a": TPR_ONE, "b": _tpr_zero(30)}, _odds_policy(min_group_positives=30))
    assert result.decided_groups["true_positive_rate"] == ("a", "b")
    (violation,) = result.violations
    assert violation.metric == "equalized_odds_difference" and violation.value == 1.0
    assert spread(violation) == "true positive rate a 1.0000 vs b 0.0000"


def test_a_group_one_positive_short_has_its_tpr_named_and_not_decided_on() -> None:
    result = check({"a": TPR_ONE, "b": _tpr_zero(29)}, _odds_policy(min_group_positives=30))
    assert result.violations == ()
    assert result.decided_groups["true_positive_rate"] == ("a",)
    assert result.equalized_odds_difference == 0.0  # the FPR gap alone: 0 vs 0
    b = next(g for g in result.groups if g.group == "b")
    assert (b.positives, b.true_positive_rate, b.undecided) == (29, 0.0, ("true_positive_rate",))
    assert (
        "group 'b' has 29 positives < min_group_positives 30: its TPR is not decided on (reported only)"
        in (result.notes)
    )


def test_a_group_with_exactly_min_group_negatives_has_its_fpr_decided_on_and_one_short_not() -> None:
    fpr_one = confusion_group(tp=30, fn=0, fp=30, tn=0)  # TPR 1, FPR 1
    at = check({"a": TPR_ONE, "b": fpr_one}, _odds_policy(min_group_negatives=30))
    (violation,) = at.violations
    assert spread(violation) == "false positive rate b 1.0000 vs a 0.0000"
    short = check(
        {"a": TPR_ONE, "b": confusion_group(tp=30, fn=0, fp=29, tn=0)}, _odds_policy(min_group_negatives=30)
    )
    assert short.violations == () and short.equalized_odds_difference == 0.0
    assert (
        "group 'b' has 29 negatives < min_group_negatives 30: its FPR is not decided on (reported only)"
        in (short.notes)
    )


def test_the_gate_reason_names_a_group_too_small_for_a_rate() -> None:
    from components.model_validation.validation_gate import decide
    from tests.components.model_validation.test_decide_edges import explained

    result = check({"a": TPR_ONE, "b": _tpr_zero(5)}, _odds_policy(min_group_positives=30))
    reason = decide([result], explained(), [])["fairness"].reason
    assert "g: group 'b' has 5 positives < min_group_positives 30: its TPR is not decided on" in reason
    rejected = check(
        {"a": TPR_ONE, "b": _tpr_zero(5), "c": _tpr_zero(30)}, _odds_policy(min_group_positives=30)
    )
    decision = decide([rejected], explained(), [])["fairness"]
    assert decision.decision == "reject"
    assert decision.reason.startswith("g: equalized_odds_difference 1.0000 > max 0.5000")
    assert "group 'b' has 5 positives < min_group_positives 30" in decision.reason
