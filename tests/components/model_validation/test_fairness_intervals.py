"""Fairness gated on intervals: a limit fails only when the whole interval of a disparity is beyond it. The
interval of each disparity reported (holding its estimate, also when point estimates decide), a limit at an
interval's edge not conclusive and named, just beyond it a violation with the interval, an inconclusive
metric not stopping the later checks, and a score at the decision threshold counted as positive. The point
limits are in test_fairness_limits.py, the groups in test_fairness_groups.py.

Groups are built from exact confusion-matrix counts over 32 rows (fairness_groups.py), so every rate is a
multiple of 1/32 and every difference and ratio the gate compares is exact.
"""

import numpy as np
import pytest

from components.model_validation.intervals import gap_interval, odds_interval, ratio_interval
from tests.components.model_validation.fairness_groups import above, below, check, policy
from tests.support.gate_inputs import confusion_group

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
