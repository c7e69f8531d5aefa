"""Fairness thresholds at, just inside and just outside each limit, per metric: demographic parity
difference and ratio (for either favourable class, the schema's unless the policy says otherwise),
equalised odds driven by the TPR or the FPR gap (and undefined where no rate is), each limit failing alone
or all three in order, and the policy's impossible thresholds refused. Which groups and attributes are
checked is in test_fairness_groups.py; gating on intervals in test_fairness_intervals.py.

Groups are built from exact confusion-matrix counts over 32 rows (fairness_groups.py), so every rate is a
multiple of 1/32 and every difference and ratio the gate compares is exact.
"""

import math
from typing import Literal

import pytest
from pydantic import ValidationError

from components.model_validation.config import FairnessPolicy
from components.model_validation.fairness import evaluate_fairness
from tests.components.model_validation.fairness_groups import (
    DPD,
    DPR,
    EOD,
    A,
    B,
    above,
    below,
    check,
    policy,
    spread,
)
from tests.support.gate_inputs import confusion_group, scored_groups


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


# --- equalised odds where a rate is undefined, and ties ---


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


def test_a_tie_between_the_tpr_and_fpr_gaps_is_explained_by_the_tpr_gap() -> None:
    # TPR 0.75 vs 0.5 and FPR 0.5 vs 0.25: both gaps 0.25.
    groups = {"a": confusion_group(12, 4, 8, 8), "b": confusion_group(8, 8, 4, 12)}
    (violation,) = check(groups, policy(max_equalized_odds_difference=0.125)).violations
    assert spread(violation) == "true positive rate a 0.7500 vs b 0.5000"


# --- impossible thresholds ---


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
