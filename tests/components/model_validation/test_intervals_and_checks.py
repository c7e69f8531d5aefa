"""Bootstrap disparity intervals and the Violation wording, on hand-built rates and groups."""

import math

import numpy as np

from components.model_validation.checks import Violation, finite_or_none, slug
from components.model_validation.intervals import DISPARITIES, _rates, disparities, disparity_intervals

NAN = float("nan")


def test_disparities_of_hand_built_rates() -> None:
    # rows: groups; columns: selection rate, TPR, FPR
    rates = np.array([[0.5, 0.75, 0.25], [0.25, 0.5, 0.125], [0.375, 0.625, 0.25]])
    assert disparities(rates, favourable_prediction=1) == {
        "demographic_parity_difference": 0.25,
        "demographic_parity_ratio": 0.5,  # 0.25 / 0.5
        "equalized_odds_difference": 0.25,  # TPR gap 0.25 > FPR gap 0.125
    }
    # Favourable = 0: rates 0.5, 0.75, 0.625 -> ratio 0.5 / 0.75
    assert disparities(rates, favourable_prediction=0)["demographic_parity_ratio"] == 0.5 / 0.75


def test_equalized_odds_takes_the_false_positive_gap_when_it_is_larger() -> None:
    rates = np.array([[0.5, 0.5, 0.5], [0.5, 0.375, 0.125]])
    assert disparities(rates, 1)["equalized_odds_difference"] == 0.375


def test_undefined_rates_are_skipped_not_taken_as_zero() -> None:
    rates = np.array([[0.5, NAN, 0.5], [0.25, NAN, 0.125], [0.25, 0.5, NAN]])
    result = disparities(rates, 1)
    assert result["equalized_odds_difference"] == 0.375  # only the FPR gap has two defined groups
    all_undefined = disparities(np.array([[0.5, NAN, NAN], [0.25, NAN, NAN]]), 1)
    assert math.isnan(all_undefined["equalized_odds_difference"])


def test_no_favourable_outcome_anywhere_is_a_ratio_of_one() -> None:
    rates = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    assert disparities(rates, 1)["demographic_parity_ratio"] == 1.0


def _groups(
    *members: tuple[list[int], list[bool]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[str, ...]]:
    y: list[int] = []
    predicted: list[bool] = []
    names: list[str] = []
    for i, (labels, preds) in enumerate(members):
        y += labels
        predicted += preds
        names += [f"g{i}"] * len(labels)
    return np.array(y), np.array(predicted), np.array(names), tuple(f"g{i}" for i in range(len(members)))


def test_groups_with_fixed_predictions_give_a_point_interval() -> None:
    # Every row of g0 predicted positive, every row of g1 negative: every resample is identical.
    y, predicted, groups, checked = _groups(([1, 0] * 8, [True] * 16), ([1, 0] * 8, [False] * 16))
    intervals = disparity_intervals(y, predicted, groups, checked, 1, 20, 0.95, seed=0)
    assert set(intervals) == set(DISPARITIES)
    assert intervals["demographic_parity_difference"] == (1.0, 1.0)
    assert intervals["demographic_parity_ratio"] == (0.0, 0.0)
    assert intervals["equalized_odds_difference"] == (1.0, 1.0)


def test_a_group_without_positives_leaves_tpr_undefined_in_every_draw() -> None:
    y, predicted, groups, checked = _groups(([0] * 16, [True] * 8 + [False] * 8), ([0] * 16, [False] * 16))
    intervals = disparity_intervals(y, predicted, groups, checked, 1, 30, 0.9, seed=1)
    low, high = intervals["equalized_odds_difference"]
    assert 0.0 < low <= 0.5 <= high <= 1.0  # the FPR gap, whose point value is 0.5


def test_no_defined_gap_in_any_draw_is_an_undefined_interval() -> None:
    y, predicted, groups, checked = _groups(([1] * 8, [True] * 8), ([0] * 8, [False] * 8))
    low, high = disparity_intervals(y, predicted, groups, checked, 1, 10, 0.9, seed=0)[
        "equalized_odds_difference"
    ]
    assert math.isnan(low) and math.isnan(high)


def test_interval_is_the_central_percentile_range_of_the_draws() -> None:
    y, predicted, groups, checked = _groups(
        ([1, 0] * 16, [True, False, False, True] * 8), ([1, 0] * 16, [False] * 32)
    )
    wide = disparity_intervals(y, predicted, groups, checked, 1, 200, 0.98, seed=3)[
        "demographic_parity_difference"
    ]
    narrow = disparity_intervals(y, predicted, groups, checked, 1, 200, 0.6, seed=3)[
        "demographic_parity_difference"
    ]
    assert wide[0] < narrow[0] < 0.5 < narrow[1] < wide[1]  # the point value 0.5 in both, wider with coverage
    assert wide[0] >= 0.0 and wide[1] <= 1.0


def test_max_violation_message_names_subject_metric_value_bound_threshold_and_detail() -> None:
    violation = Violation("fairness", "sex", "demographic_parity_difference", 0.25, 0.125, "max", "a vs b")
    assert violation.message == "sex: demographic_parity_difference 0.2500 > max 0.1250 (a vs b)"


def test_min_violation_message_without_detail() -> None:
    violation = Violation("behavioural", "directional:x:+1", "pass_fraction", 0.75, 0.875, "min")
    assert violation.message == "directional:x:+1: pass_fraction 0.7500 < min 0.8750"


def test_tag_key_keeps_only_characters_mlflow_accepts() -> None:
    violation = Violation("behavioural", "invariance:region:permute", "max_abs_change", 0.5, 0.2, "max")
    assert violation.tag_key == "invariance_region_permute.max_abs_change"
    assert slug("a b-c.d/e_f") == "a b-c.d/e_f"
    assert slug("::x::") == "x"
    assert slug("???") == "_"
    assert slug("AbC") == "AbC"
    assert slug("Xray_") == "Xray"


def test_finite_or_none_writes_undefined_metrics_as_null() -> None:
    assert finite_or_none(0.25) == 0.25
    assert finite_or_none(None) is None
    assert finite_or_none(NAN) is None
    assert finite_or_none(math.inf) is None
    assert finite_or_none(-math.inf) is None
    assert type(finite_or_none(np.float32(0.5))) is float  # numpy scalars become JSON-able floats


def test_rates_of_one_group() -> None:
    selection, tpr, fpr = _rates(np.array([1, 1, 0, 0]), np.array([True, False, True, True]))
    assert (selection, tpr, fpr) == (0.75, 0.5, 1.0)


def test_each_group_is_resampled_from_its_own_rows() -> None:
    # Three groups with fixed predictions (1, 0, 1): resampling within each keeps every draw identical.
    y, predicted, groups, checked = _groups(
        ([1, 0] * 4, [True] * 8), ([1, 0] * 4, [False] * 8), ([1, 0] * 4, [True] * 8)
    )
    intervals = disparity_intervals(y, predicted, groups, checked, 1, 20, 0.9, seed=0)
    assert intervals["demographic_parity_difference"] == (1.0, 1.0)


def test_every_row_of_a_group_can_be_drawn() -> None:
    # Only the first row of g0 is predicted positive; draws that include it give a gap above 0.
    y, predicted, groups, checked = _groups(([1, 0] * 8, [True] + [False] * 15), ([1, 0] * 8, [False] * 16))
    low, high = disparity_intervals(y, predicted, groups, checked, 1, 200, 0.9, seed=0)[
        "demographic_parity_difference"
    ]
    assert low == 0.0 and high > 0.0


def test_interval_ends_are_the_two_tail_percentiles() -> None:
    # g0: 4 rows, 1 predicted positive -> a draw's gap is k/4 with k ~ Binomial(4, 1/4):
    # P(k <= 1) = 0.738, P(k <= 2) = 0.949. An 87% interval's top is the 93.5th percentile: k = 2.
    y, predicted, groups, checked = _groups(
        ([1, 0, 1, 0], [True, False, False, False]), ([1, 0] * 8, [False] * 16)
    )
    low, high = disparity_intervals(y, predicted, groups, checked, 1, 4000, 0.87, seed=0)[
        "demographic_parity_difference"
    ]
    assert (low, high) == (0.0, 0.5)
