"""The metrics gate at, just inside and just outside each threshold.

Values are powers-of-two fractions so ``champion_auc - max_auc_regression`` is exact,
and ``np.nextafter`` gives the closest float on either side of a threshold.
"""

import math

import numpy as np
import pytest
from pydantic import ValidationError

from components.promotion_gate.promotion import MetricsGatePolicy, decide
from mlops.gates import PROMOTE, REJECT

FLOOR = 0.75
CHAMPION_AUC = 0.875
MAX_REGRESSION = 0.125
REGRESSION_EDGE = CHAMPION_AUC - MAX_REGRESSION  # 0.75 exactly


def below(value: float) -> float:
    return float(np.nextafter(value, -math.inf))


def above(value: float) -> float:
    return float(np.nextafter(value, math.inf))


def test_auc_exactly_at_the_floor_is_promoted() -> None:
    decision = decide(MetricsGatePolicy(auc_floor=FLOOR), FLOOR, 0.0, has_champion=False)
    assert decision.decision == PROMOTE
    assert decision.gate == "metrics"
    assert decision.reason == "test_auc 0.7500 >= floor 0.7500; no current champion"


def test_auc_just_above_the_floor_is_promoted() -> None:
    assert decide(MetricsGatePolicy(auc_floor=FLOOR), above(FLOOR), 0.0, has_champion=False).promote


def test_auc_just_below_the_floor_is_rejected_naming_value_and_floor() -> None:
    auc = below(FLOOR)
    decision = decide(MetricsGatePolicy(auc_floor=FLOOR), auc, 0.0, has_champion=False)
    assert decision.decision == REJECT
    assert decision.gate == "metrics"
    assert decision.reason == f"test_auc {auc:.4f} is below the floor {FLOOR:.4f}"
    assert decision.metrics["test_auc"] == auc


def test_regression_exactly_at_the_allowed_margin_is_promoted() -> None:
    policy = MetricsGatePolicy(auc_floor=0.5, max_auc_regression=MAX_REGRESSION)
    decision = decide(policy, REGRESSION_EDGE, CHAMPION_AUC, has_champion=True)
    assert decision.promote
    assert decision.reason == "test_auc 0.7500 >= floor 0.5000; champion 0.8750"
    assert decision.metrics == {"test_auc": REGRESSION_EDGE, "champion_auc": CHAMPION_AUC}


def test_regression_just_inside_the_margin_is_promoted() -> None:
    policy = MetricsGatePolicy(auc_floor=0.5, max_auc_regression=MAX_REGRESSION)
    assert decide(policy, above(REGRESSION_EDGE), CHAMPION_AUC, has_champion=True).promote


def test_regression_just_beyond_the_margin_is_rejected_naming_both_aucs_and_margin() -> None:
    policy = MetricsGatePolicy(auc_floor=0.5, max_auc_regression=MAX_REGRESSION)
    auc = below(REGRESSION_EDGE)
    decision = decide(policy, auc, CHAMPION_AUC, has_champion=True)
    assert decision.decision == REJECT
    assert decision.reason == (
        f"test_auc {auc:.4f} is worse than the champion's 0.8750 by more than the allowed 0.1250"
    )


def test_a_better_champion_is_ignored_when_there_is_none() -> None:
    policy = MetricsGatePolicy(auc_floor=0.5, max_auc_regression=MAX_REGRESSION)
    decision = decide(policy, 0.625, CHAMPION_AUC, has_champion=False)
    assert decision.promote
    assert "no current champion" in decision.reason
    assert math.isnan(decision.metrics["champion_auc"])


def test_a_challenger_better_than_the_champion_is_promoted() -> None:
    policy = MetricsGatePolicy(auc_floor=0.5, max_auc_regression=0.0)
    assert decide(policy, CHAMPION_AUC, 0.75, has_champion=True).promote
    assert not decide(policy, below(0.75), 0.75, has_champion=True).promote


def test_both_thresholds_broken_are_both_named_floor_first() -> None:
    policy = MetricsGatePolicy(auc_floor=FLOOR, max_auc_regression=MAX_REGRESSION)
    decision = decide(policy, 0.625, CHAMPION_AUC, has_champion=True)
    assert not decision.promote
    floor_part, regression_part = decision.reason.split("; ")
    assert floor_part == "test_auc 0.6250 is below the floor 0.7500"
    assert regression_part.startswith("test_auc 0.6250 is worse than the champion's 0.8750")


def test_only_the_regression_fails_when_the_floor_is_met() -> None:
    policy = MetricsGatePolicy(auc_floor=0.5, max_auc_regression=MAX_REGRESSION)
    decision = decide(policy, 0.625, CHAMPION_AUC, has_champion=True)
    assert "below the floor" not in decision.reason
    assert "worse than the champion's" in decision.reason


def test_a_nan_champion_auc_does_not_block_a_challenger_above_the_floor() -> None:
    # The comparison with NaN is False: an unscorable champion must not reject the challenger.
    assert decide(MetricsGatePolicy(auc_floor=0.5), 0.8, float("nan"), has_champion=True).promote


@pytest.mark.parametrize(
    ("field", "value"),
    [("auc_floor", -0.01), ("auc_floor", 1.01), ("max_auc_regression", -0.01), ("max_auc_regression", 1.5)],
)
def test_policy_rejects_thresholds_outside_zero_one(field: str, value: float) -> None:
    with pytest.raises(ValidationError, match=field):
        MetricsGatePolicy(**{field: value})


def test_policy_accepts_the_closed_interval_ends() -> None:
    assert MetricsGatePolicy(auc_floor=0.0, max_auc_regression=1.0).auc_floor == 0.0
    assert MetricsGatePolicy(auc_floor=1.0, max_auc_regression=0.0).max_auc_regression == 0.0


# --- "too good to be true": a test AUC near 1 that one feature alone explains -----------------------
TOO_GOOD = 0.9921875  # 127/128: exact in binary, like the margin below
MARGIN = 0.015625  # 1/64


def leak_policy() -> MetricsGatePolicy:
    return MetricsGatePolicy(auc_floor=0.5, too_good_auc=TOO_GOOD, leak_margin=MARGIN)


def test_a_test_auc_at_the_threshold_explained_by_one_feature_is_rejected_naming_it() -> None:
    feature_auc = TOO_GOOD - MARGIN  # exactly at the margin: explained
    decision = decide(
        leak_policy(), TOO_GOOD, 0.0, False, top_feature="decile_score", top_feature_auc=feature_auc
    )
    assert decision.decision == REJECT
    assert "too good to be true" in decision.reason
    assert "feature 'decile_score' alone scores AUC 0.9766" in decision.reason
    assert "ignored_columns" in decision.reason
    assert decision.metrics["top_feature_auc"] == feature_auc


def test_a_test_auc_just_below_the_threshold_is_not_a_leak_finding() -> None:
    decision = decide(
        leak_policy(), below(TOO_GOOD), 0.0, False, top_feature="x", top_feature_auc=below(TOO_GOOD)
    )
    assert decision.promote


def test_a_test_auc_just_above_the_threshold_is_a_finding() -> None:
    assert not decide(
        leak_policy(), above(TOO_GOOD), 0.0, False, top_feature="x", top_feature_auc=TOO_GOOD
    ).promote


def test_a_feature_just_outside_the_margin_does_not_explain_the_model() -> None:
    edge = TOO_GOOD - MARGIN
    assert decide(leak_policy(), TOO_GOOD, 0.0, False, top_feature="x", top_feature_auc=below(edge)).promote
    assert not decide(
        leak_policy(), TOO_GOOD, 0.0, False, top_feature="x", top_feature_auc=above(edge)
    ).promote


def test_a_perfect_model_no_single_feature_explains_is_promoted() -> None:
    decision = decide(leak_policy(), 1.0, 0.0, False, top_feature="x", top_feature_auc=0.75)
    assert decision.promote


def test_the_leak_finding_comes_after_the_other_failures() -> None:
    policy = MetricsGatePolicy(
        auc_floor=0.5, max_auc_regression=0.0, too_good_auc=TOO_GOOD, leak_margin=MARGIN
    )
    decision = decide(
        policy, 0.9990234375, 1.0, True, comparison_auc=0.998046875, top_feature="x", top_feature_auc=0.998
    )
    worse, leak = decision.reason.split("; ")
    assert worse.startswith("test_auc 0.9980 is worse than the champion's 1.0000")
    assert "too good to be true" in leak


def test_the_champion_is_compared_with_the_challenger_on_the_same_rows() -> None:
    # Full test AUC clears the champion; on the champion's unseen rows the challenger is worse: rejected.
    policy = MetricsGatePolicy(auc_floor=0.5, max_auc_regression=MAX_REGRESSION)
    rejected = decide(policy, CHAMPION_AUC, CHAMPION_AUC, True, comparison_auc=below(REGRESSION_EDGE))
    assert not rejected.promote
    assert "did not learn from" in rejected.reason
    promoted = decide(policy, 0.5, CHAMPION_AUC, True, comparison_auc=REGRESSION_EDGE)
    assert promoted.promote
    assert promoted.reason.endswith("champion 0.8750 vs 0.7500 on the rows it did not learn from")


def test_a_top_feature_the_schema_acknowledges_is_no_too_good_finding() -> None:
    args = (leak_policy(), TOO_GOOD, 0.0, False)
    assert not decide(*args, top_feature="decile_score", top_feature_auc=TOO_GOOD).promote
    assert decide(
        *args, top_feature="decile_score", top_feature_auc=TOO_GOOD, allowed=("decile_score",)
    ).promote
    assert not decide(*args, top_feature="decile_score", top_feature_auc=TOO_GOOD, allowed=("end",)).promote


def test_a_champion_that_was_not_compared_is_named_in_the_reason() -> None:
    why = "champion compas version 1 was not compared: it needs column(s) ['end'] … judged on its own merits"
    decision = decide(MetricsGatePolicy(auc_floor=0.5), 0.75, 0.0, False, not_compared=why)
    assert decision.promote and decision.reason == f"test_auc 0.7500 >= floor 0.5000; {why}"
