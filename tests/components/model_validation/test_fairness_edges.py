"""Fairness thresholds at, just inside and just outside each limit, per metric, group and attribute.

Groups are built from exact confusion-matrix counts over 32 rows, so every rate is a
multiple of 1/32 and every difference and ratio the gate compares is exact.
"""

import math
from typing import Literal

import numpy as np
import pytest
from pydantic import ValidationError

from components.model_validation.config import FairnessPolicy
from components.model_validation.fairness import evaluate_fairness, protected_groups
from components.model_validation.fairness_notes import rate_spread
from components.model_validation.group_bins import MISSING_GROUP
from components.model_validation.intervals import gap_interval, odds_interval, ratio_interval
from tests.support.gate_inputs import confusion_group, scored_groups

# selection 16/32 vs 12/32 -> demographic parity difference 0.125; favourable (0) rates 0.5 vs 0.625 -> ratio 0.8;
# TPR 0.5 vs 0.5, FPR 0.5 vs 0.25 -> equalised odds difference 0.25 (driven by FPR).
A = confusion_group(tp=8, fn=8, fp=8, tn=8)
B = confusion_group(tp=8, fn=8, fp=4, tn=12)
DPD, DPR, EOD = 0.125, 0.8, 0.25

OFF = {"max_demographic_parity_difference": 1.0, "min_demographic_parity_ratio": 0.0}
OFF_EOD = {"max_equalized_odds_difference": 1.0}


def below(value: float) -> float:
    return float(np.nextafter(value, -math.inf))


def above(value: float) -> float:
    return float(np.nextafter(value, math.inf))


def policy(**overrides: float) -> FairnessPolicy:
    """Point estimates gated (not intervals), groups of 32 rows and any group with a positive / a negative
    decided on, every limit off unless overridden."""
    base: dict[str, float] = {
        "min_group_size": 32,
        "min_group_positives": 1,
        "min_group_negatives": 1,
        "gate_on_intervals": False,
        **OFF,
        **OFF_EOD,
    }
    return FairnessPolicy(**{**base, **overrides})


def spread(violation) -> str:  # type: ignore[no-untyped-def]
    """The groups part of a violation's detail; the interval follows it after '; '."""
    head, interval = violation.detail.split("; ")
    assert interval.startswith("95% interval ")
    return str(head)


def check(groups: dict, fairness_policy: FairnessPolicy):  # type: ignore[no-untyped-def]
    frame, scores = scored_groups(groups)
    (result,) = evaluate_fairness(frame, scores, "y", ["g"], fairness_policy)
    return result


def test_the_constructed_groups_have_the_intended_disparities() -> None:
    result = check({"a": A, "b": B}, policy())
    assert result.demographic_parity_difference == DPD
    assert result.demographic_parity_ratio == DPR
    assert result.equalized_odds_difference == EOD
    assert result.checked_groups == ("a", "b")
    assert result.violations == ()


# --- demographic parity difference (max) ---


def test_parity_difference_exactly_at_the_limit_passes() -> None:
    assert check({"a": A, "b": B}, policy(max_demographic_parity_difference=DPD)).violations == ()


def test_parity_difference_inside_the_limit_passes() -> None:
    assert check({"a": A, "b": B}, policy(max_demographic_parity_difference=above(DPD))).violations == ()


def test_parity_difference_just_over_the_limit_is_a_violation_naming_groups_value_and_limit() -> None:
    limit = below(DPD)
    (violation,) = check({"a": A, "b": B}, policy(max_demographic_parity_difference=limit)).violations
    assert (violation.check, violation.subject, violation.metric) == (
        "fairness",
        "g",
        "demographic_parity_difference",
    )
    assert violation.value == DPD and violation.threshold == limit and violation.bound == "max"
    assert spread(violation) == "selection rate a 0.5000 vs b 0.3750"
    assert violation.message.startswith("g: demographic_parity_difference 0.1250 > max 0.1250")


# --- demographic parity ratio (min), for either favourable class ---


def test_parity_ratio_exactly_at_the_limit_passes() -> None:
    assert check({"a": A, "b": B}, policy(min_demographic_parity_ratio=DPR)).violations == ()


def test_parity_ratio_inside_the_limit_passes() -> None:
    assert check({"a": A, "b": B}, policy(min_demographic_parity_ratio=below(DPR))).violations == ()


def test_parity_ratio_just_under_the_limit_is_a_violation_naming_the_favourable_rates() -> None:
    limit = above(DPR)
    (violation,) = check({"a": A, "b": B}, policy(min_demographic_parity_ratio=limit)).violations
    assert violation.metric == "demographic_parity_ratio"
    assert violation.value == DPR and violation.threshold == limit and violation.bound == "min"
    assert spread(violation) == "favourable rate b 0.6250 vs a 0.5000"
    assert violation.message.startswith("g: demographic_parity_ratio 0.8000 < min 0.8000")


def test_parity_ratio_uses_the_favourable_class_when_it_is_the_positive_prediction() -> None:
    # Favourable = predicted 1: rates 0.5 vs 0.375 -> ratio 0.75.
    result = check({"a": A, "b": B}, policy(favourable_outcome="positive", min_demographic_parity_ratio=0.75))
    assert result.demographic_parity_ratio == 0.75
    assert result.violations == ()
    (violation,) = check(
        {"a": A, "b": B}, policy(favourable_outcome="positive", min_demographic_parity_ratio=above(0.75))
    ).violations
    assert spread(violation) == "favourable rate a 0.5000 vs b 0.3750"


def test_no_group_given_the_favourable_prediction_is_a_ratio_of_one_with_a_note() -> None:
    everyone_positive = {"a": confusion_group(16, 0, 16, 0), "b": confusion_group(16, 0, 16, 0)}
    result = check(everyone_positive, policy(min_demographic_parity_ratio=1.0))
    assert result.demographic_parity_ratio == 1.0
    assert result.violations == ()
    assert (
        "no checked group gets the favourable prediction; demographic parity ratio taken as 1" in result.notes
    )


def test_one_group_never_favoured_has_a_ratio_of_zero() -> None:
    result = check({"a": confusion_group(16, 0, 16, 0), "b": B}, policy(min_demographic_parity_ratio=0.0))
    assert result.demographic_parity_ratio == 0.0
    (violation,) = check(
        {"a": confusion_group(16, 0, 16, 0), "b": B}, policy(min_demographic_parity_ratio=0.01)
    ).violations
    assert violation.metric == "demographic_parity_ratio" and violation.value == 0.0


# --- equalised odds difference (max), driven by TPR or FPR ---


def test_equalized_odds_exactly_at_the_limit_passes() -> None:
    assert check({"a": A, "b": B}, policy(max_equalized_odds_difference=EOD)).violations == ()


def test_equalized_odds_inside_the_limit_passes() -> None:
    assert check({"a": A, "b": B}, policy(max_equalized_odds_difference=above(EOD))).violations == ()


def test_equalized_odds_just_over_the_limit_names_the_false_positive_rate_gap() -> None:
    limit = below(EOD)
    (violation,) = check({"a": A, "b": B}, policy(max_equalized_odds_difference=limit)).violations
    assert violation.metric == "equalized_odds_difference"
    assert violation.value == EOD and violation.threshold == limit and violation.bound == "max"
    assert spread(violation) == "false positive rate a 0.5000 vs b 0.2500"


def test_equalized_odds_driven_by_the_true_positive_rate_names_it() -> None:
    # TPR 0.75 vs 0.5 (gap 0.25), FPR 0.25 vs 0.125 (gap 0.125): the TPR gap sets the metric.
    groups = {"a": confusion_group(12, 4, 4, 12), "b": confusion_group(8, 8, 2, 14)}
    result = check(groups, policy(max_equalized_odds_difference=0.25))
    assert result.equalized_odds_difference == 0.25 and result.violations == ()
    (violation,) = check(groups, policy(max_equalized_odds_difference=below(0.25))).violations
    assert spread(violation) == "true positive rate a 0.7500 vs b 0.5000"


def test_equalized_odds_is_the_larger_gap_not_the_smaller() -> None:
    groups = {"a": confusion_group(12, 4, 4, 12), "b": confusion_group(8, 8, 2, 14)}
    (violation,) = check(groups, policy(max_equalized_odds_difference=0.2)).violations
    assert violation.value == 0.25


def test_equalized_odds_without_positives_uses_the_false_positive_gap_and_names_it() -> None:
    # No positive labels anywhere: TPR undefined for every group, FPR 0.5 vs 0.25.
    groups = {"a": confusion_group(0, 0, 16, 16), "b": confusion_group(0, 0, 8, 24)}
    result = check(groups, policy(max_equalized_odds_difference=0.25))
    assert result.equalized_odds_difference == 0.25 and result.violations == ()
    (violation,) = check(groups, policy(max_equalized_odds_difference=0.125)).violations
    assert spread(violation) == "false positive rate a 0.5000 vs b 0.2500"


# --- each metric alone: one of several checks failing ---


@pytest.mark.parametrize(
    ("overrides", "failing"),
    [
        ({"max_demographic_parity_difference": 0.1}, "demographic_parity_difference"),
        ({"min_demographic_parity_ratio": 0.9}, "demographic_parity_ratio"),
        ({"max_equalized_odds_difference": 0.2}, "equalized_odds_difference"),
    ],
)
def test_one_limit_of_three_failing_names_only_that_metric(overrides: dict, failing: str) -> None:
    strict_elsewhere = {
        "max_demographic_parity_difference": DPD,
        "min_demographic_parity_ratio": DPR,
        "max_equalized_odds_difference": EOD,
    }
    result = check({"a": A, "b": B}, policy(**{**strict_elsewhere, **overrides}))
    assert [v.metric for v in result.violations] == [failing]


def test_all_three_limits_failing_are_reported_in_order() -> None:
    result = check(
        {"a": A, "b": B},
        policy(
            max_demographic_parity_difference=0.1,
            min_demographic_parity_ratio=0.9,
            max_equalized_odds_difference=0.2,
        ),
    )
    assert [v.metric for v in result.violations] == [
        "demographic_parity_difference",
        "demographic_parity_ratio",
        "equalized_odds_difference",
    ]


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


# --- intervals: a limit fails only when the whole interval is beyond it ---

# Group a: everyone predicted positive; b: half predicted positive (favourable = the positive prediction).
SURE = confusion_group(tp=16, fn=0, fp=16, tn=0)
HALF = confusion_group(tp=8, fn=8, fp=8, tn=8)


def _interval(metric: str, confidence: float = 0.9) -> tuple[float, float]:
    """The score interval of a disparity of SURE vs HALF, straight from the interval functions."""
    rows = np.array([32, 16]), np.array([32, 32])
    if metric == "demographic_parity_difference":
        low, high = gap_interval(*rows, confidence)
    elif metric == "demographic_parity_ratio":
        low, high = ratio_interval(np.array([16, 32]), np.array([32, 32]), confidence)
    else:
        rates = np.array([16, 8]), np.array([16, 16])
        low, high = odds_interval(rates, rates, confidence)
    return float(low), float(high)


def _gated(**overrides: float):  # type: ignore[no-untyped-def]
    return check(
        {"a": SURE, "b": HALF},
        policy(gate_on_intervals=True, confidence=0.9, favourable_outcome="positive", **overrides),
    )


@pytest.mark.parametrize(
    ("metric", "estimate"),
    [
        ("demographic_parity_difference", 0.5),
        ("demographic_parity_ratio", 0.5),
        ("equalized_odds_difference", 0.5),
    ],
)
def test_the_gate_reports_the_interval_of_each_disparity_and_it_holds_the_estimate(
    metric: str, estimate: float
) -> None:
    result = _gated()
    assert getattr(result, metric) == estimate
    assert result.intervals[metric] == _interval(metric)
    low, high = result.intervals[metric]
    assert 0.0 < low < estimate < high < 1.0


def test_a_max_limit_at_the_interval_bottom_is_not_conclusive_and_named() -> None:
    low, high = _interval("demographic_parity_difference")
    assert low < 0.5  # the point estimate lies beyond the limit, the interval reaches it
    result = _gated(max_demographic_parity_difference=low)
    assert result.violations == ()
    assert result.status("demographic_parity_difference") == "not_conclusive"
    assert (
        f"g demographic_parity_difference 0.5000 is beyond the max {low:.4f}, but its 90% interval "
        f"{low:.4f}..{high:.4f} reaches across it: not conclusive on these rows; test on more rows to decide"
    ) in result.undecided


def test_a_max_limit_just_below_the_whole_interval_is_a_violation_with_the_interval() -> None:
    low, high = _interval("demographic_parity_difference")
    result = _gated(max_demographic_parity_difference=below(low))
    (violation,) = result.violations
    assert violation.metric == "demographic_parity_difference"
    assert violation.detail == f"selection rate a 1.0000 vs b 0.5000; 90% interval {low:.4f}..{high:.4f}"


def test_a_min_limit_at_the_interval_top_is_inconclusive_and_just_above_it_is_a_violation() -> None:
    low, high = _interval("demographic_parity_ratio")
    assert _gated(min_demographic_parity_ratio=high).violations == ()
    (violation,) = _gated(min_demographic_parity_ratio=above(high)).violations
    assert violation.metric == "demographic_parity_ratio"
    assert violation.detail == f"favourable rate a 1.0000 vs b 0.5000; 90% interval {low:.4f}..{high:.4f}"


def test_equalized_odds_interval_gates_like_the_others() -> None:
    low, _ = _interval("equalized_odds_difference")
    assert _gated(max_equalized_odds_difference=low).violations == ()
    (violation,) = _gated(max_equalized_odds_difference=below(low)).violations
    assert violation.metric == "equalized_odds_difference"


def test_an_estimate_at_the_limit_is_never_a_violation_but_its_interval_across_it_is_not_a_pass() -> None:
    # The interval reaches beyond 0.5 on both metrics and the estimate 0.5 is at the limit: not a
    # violation, and not a pass either: these rows cannot tell which side the disparity lies on.
    both = _gated(max_demographic_parity_difference=0.5, max_equalized_odds_difference=0.5)
    assert both.violations == ()
    assert both.status("demographic_parity_difference") == "not_conclusive"
    assert both.status("equalized_odds_difference") == "not_conclusive"
    ratio = _gated(min_demographic_parity_ratio=0.5)
    assert ratio.violations == () and ratio.status("demographic_parity_ratio") == "not_conclusive"


def test_gating_on_point_estimates_still_reports_the_intervals() -> None:
    result = check(
        {"a": SURE, "b": HALF}, policy(confidence=0.9, max_demographic_parity_difference=below(0.5))
    )
    (violation,) = result.violations  # the point estimate decides
    low, high = _interval("demographic_parity_difference")
    assert violation.detail.endswith(f"; 90% interval {low:.4f}..{high:.4f}")
    assert set(result.intervals) == {
        "demographic_parity_difference",
        "demographic_parity_ratio",
        "equalized_odds_difference",
    }


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_demographic_parity_difference", -0.01),
        ("max_demographic_parity_difference", 1.01),
        ("min_demographic_parity_ratio", -0.01),
        ("max_equalized_odds_difference", 1.01),
        ("min_group_size", 0),
        ("decision_threshold", 1.0),
        ("decision_threshold", 0.0),
        ("confidence", 0.5),
        ("min_group_positives", 0),
        ("min_group_negatives", 0),
        ("quantile_bins", 1),
        ("max_numeric_values", 1),
    ],
)
def test_policy_rejects_impossible_thresholds(field: str, value: float) -> None:
    with pytest.raises(ValidationError, match=field):
        FairnessPolicy(**{field: value})


def test_equalized_odds_is_undefined_when_no_rate_is_defined_for_two_groups() -> None:
    # a: positives only (TPR defined, FPR not); b: negatives only (FPR defined, TPR not).
    result = check(
        {"a": confusion_group(16, 16, 0, 0), "b": confusion_group(0, 0, 16, 16)},
        policy(max_equalized_odds_difference=0.0),
    )
    assert math.isnan(result.equalized_odds_difference)
    assert result.violations == ()
    assert (
        "equalized odds not decided on: fewer than two groups with at least 1 positives (min_group_positives) "
        "and fewer than two with at least 1 negatives (min_group_negatives)"
    ) in result.notes


def test_a_rate_defined_for_one_group_only_does_not_count_as_a_zero_gap() -> None:
    # TPR is defined for a only; the FPR gap 0.5 vs 0.25 alone sets equalised odds.
    result = check({"a": confusion_group(16, 0, 8, 8), "b": confusion_group(0, 0, 8, 24)}, policy())
    assert result.equalized_odds_difference == 0.25
    (violation,) = check(
        {"a": confusion_group(16, 0, 8, 8), "b": confusion_group(0, 0, 8, 24)},
        policy(max_equalized_odds_difference=0.125),
    ).violations
    assert spread(violation) == "false positive rate a 0.5000 vs b 0.2500"


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


def test_a_tie_between_the_tpr_and_fpr_gaps_is_explained_by_the_tpr_gap() -> None:
    # TPR 0.75 vs 0.5 and FPR 0.5 vs 0.25: both gaps 0.25.
    groups = {"a": confusion_group(12, 4, 8, 8), "b": confusion_group(8, 8, 4, 12)}
    (violation,) = check(groups, policy(max_equalized_odds_difference=0.125)).violations
    assert spread(violation) == "true positive rate a 0.7500 vs b 0.5000"


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


# --- the favourable outcome: the schema's unless the policy says otherwise ---------------------------


@pytest.mark.parametrize(
    ("outcome", "schema_class", "expected"),
    [
        ("schema", "positive", 1),
        ("schema", "negative", 0),
        ("positive", "negative", 1),
        ("negative", "positive", 0),
    ],
)
def test_favourable_prediction_follows_the_schema_unless_overridden(
    outcome: Literal["schema", "positive", "negative"],
    schema_class: Literal["positive", "negative"],
    expected: int,
) -> None:
    assert FairnessPolicy(favourable_outcome=outcome).favourable_prediction(schema_class) == expected


def test_the_schema_favourable_class_drives_the_ratio() -> None:
    frame, scores = scored_groups({"a": A, "b": B})
    (negative,) = evaluate_fairness(frame, scores, "y", ["g"], policy(), favourable_class="negative")
    (positive,) = evaluate_fairness(frame, scores, "y", ["g"], policy(), favourable_class="positive")
    assert [g.favourable_rate for g in positive.groups] == [g.selection_rate for g in positive.groups]
    assert [g.favourable_rate for g in negative.groups] == pytest.approx(
        [1 - g.selection_rate for g in negative.groups]
    )
    assert positive.demographic_parity_ratio != negative.demographic_parity_ratio


def test_an_inconclusive_metric_does_not_stop_the_later_checks() -> None:
    low, _ = _interval("demographic_parity_difference")
    _, ratio_high = _interval("demographic_parity_ratio")
    result = _gated(max_demographic_parity_difference=low, min_demographic_parity_ratio=above(ratio_high))
    assert [v.metric for v in result.violations] == ["demographic_parity_ratio"]


def test_intervals_count_a_score_at_the_threshold_as_predicted_positive() -> None:
    at_threshold = ([1, 0] * 16, [0.5] * 32)
    below_threshold = ([1, 0] * 16, [below(0.5)] * 32)
    result = check({"a": at_threshold, "b": below_threshold}, policy(gate_on_intervals=True))
    low, high = result.intervals["demographic_parity_difference"]
    assert (low, high) == tuple(float(v) for v in gap_interval(np.array([32, 0]), np.array([32, 32]), 0.95))
    assert high == 1.0 and low > 0.8


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
    from components.model_validation.model_validation import decide
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
