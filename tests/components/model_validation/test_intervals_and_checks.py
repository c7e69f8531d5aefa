"""Score intervals of the disparities (against statsmodels and Newcombe's published figures) and the
Violation wording."""

import math

import numpy as np
import pytest
from statsmodels.stats.proportion import confint_proportions_2indep, proportion_confint

from components.model_validation.checks import Violation, finite_or_none, slug
from components.model_validation.intervals import gap_interval, odds_interval, ratio_interval, wilson

NAN = float("nan")
Z95 = 1.959963984540054


@pytest.mark.parametrize(("x", "n"), [(81, 263), (0, 10), (10, 10), (1, 29), (15, 148), (0, 1), (1, 1)])
def test_wilson_matches_statsmodels(x: int, n: int) -> None:
    low, high = wilson(np.array(x), np.array(n), Z95)
    assert (float(low), float(high)) == pytest.approx(
        proportion_confint(x, n, 0.05, method="wilson"), abs=1e-12
    )


@pytest.mark.parametrize(
    ("a", "n", "b", "m", "expected"),
    # Newcombe (1998), Statistics in Medicine 17:873, table II, method 10; the max gap of two groups is
    # |difference|, so an interval reaching below 0 starts at 0.
    [(56, 70, 48, 80, (0.0524, 0.3339)), (9, 10, 3, 10, (0.1705, 0.8090)), (5, 56, 0, 29, (0.0, 0.1926))],
)
def test_the_gap_of_two_groups_is_newcombes_interval(
    a: int, n: int, b: int, m: int, expected: tuple[float, float]
) -> None:
    low, high = gap_interval(np.array([a, b]), np.array([n, m]), 0.95)
    assert (round(float(low), 4), round(float(high), 4)) == expected
    ref_low, ref_high = confint_proportions_2indep(a, n, b, m, method="newcomb", compare="diff")
    assert float(high) == pytest.approx(ref_high, abs=1e-12)
    assert float(low) == pytest.approx(max(ref_low, 0.0), abs=1e-12)


def _mover_r(x1: int, n1: int, x2: int, n2: int) -> tuple[float, float]:
    """MOVER-R's closed form (Donner & Zou 2012) for p1/p2 at 95 %, a reference for 0 < p1 <= p2 < 1."""
    p1, p2 = x1 / n1, x2 / n2
    l1, u1 = proportion_confint(x1, n1, 0.05, method="wilson")
    l2, u2 = proportion_confint(x2, n2, 0.05, method="wilson")
    low = (p1 * p2 - math.sqrt((p1 * p2) ** 2 - l1 * u2 * (2 * p1 - l1) * (2 * p2 - u2))) / (
        u2 * (2 * p2 - u2)
    )
    high = (p1 * p2 + math.sqrt((p1 * p2) ** 2 - u1 * l2 * (2 * p1 - u1) * (2 * p2 - l2))) / (
        l2 * (2 * p2 - l2)
    )
    return low, high


@pytest.mark.parametrize(("x1", "n1", "x2", "n2"), [(30, 100, 45, 100), (60, 200, 70, 100), (12, 40, 20, 40)])
def test_the_ratio_of_two_groups_is_the_closed_form_mover_r(x1: int, n1: int, x2: int, n2: int) -> None:
    low, high = ratio_interval(np.array([x1, x2]), np.array([n1, n2]), 0.95)
    ref_low, ref_high = _mover_r(x1, n1, x2, n2)
    assert float(low) == pytest.approx(ref_low, abs=1e-9)
    assert float(high) == pytest.approx(min(ref_high, 1.0), abs=1e-9)


def test_every_interval_of_every_small_table_holds_its_estimate() -> None:
    # All 2-group tables with 1..12 trials each: extremes (0 and n successes) included.
    rows = [
        (a, n, b, m) for n in range(1, 13) for m in range(1, 13) for a in range(n + 1) for b in range(m + 1)
    ]
    table = np.array(rows)
    x, n = table[:, [0, 2]], table[:, [1, 3]]
    rate = x / n
    gap = rate.max(axis=1) - rate.min(axis=1)
    top = rate.max(axis=1)
    ratio = np.where(top == 0, 1.0, rate.min(axis=1) / np.where(top == 0, 1.0, top))
    for confidence in (0.8, 0.95, 0.99):
        low, high = gap_interval(x, n, confidence)
        assert np.all((low <= gap) & (gap <= high))
        low, high = ratio_interval(x, n, confidence)
        assert np.all((low <= ratio) & (ratio <= high))
        assert np.all((low >= 0) & (high <= 1))


def test_more_groups_give_a_wider_interval_for_the_same_two_extremes() -> None:
    two = gap_interval(np.array([30, 60]), np.array([100, 100]), 0.95)
    four = gap_interval(np.array([30, 60, 45, 45]), np.array([100, 100, 100, 100]), 0.95)
    assert four[0] < two[0] < 0.3 < two[1] < four[1]  # each pair at 1 - 0.05/6 instead of 0.95


def test_no_group_favoured_is_a_ratio_interval_holding_one() -> None:
    low, high = ratio_interval(np.array([0, 0]), np.array([40, 40]), 0.95)
    assert (float(low), float(high)) == (0.0, 1.0)


def test_equalized_odds_interval_is_the_larger_of_the_two_gaps_at_sidak_level() -> None:
    tpr = (np.array([40, 20]), np.array([50, 50]))  # gap 0.4
    fpr = (np.array([10, 8]), np.array([100, 100]))  # gap 0.02
    low, high = odds_interval(tpr, fpr, 0.95)
    each = math.sqrt(0.95)
    t_low, t_high = gap_interval(*tpr, each)
    f_low, f_high = gap_interval(*fpr, each)
    assert (low, high) == (max(t_low, f_low), max(t_high, f_high))
    assert low < 0.4 < high
    alone_low, alone_high = odds_interval(tpr, None, 0.95)
    assert (alone_low, alone_high) == gap_interval(*tpr, 0.95)  # one defined rate: the full level
    assert all(math.isnan(float(v)) for v in odds_interval(None, None, 0.95))


def test_a_higher_confidence_gives_a_wider_interval() -> None:
    x, n = np.array([30, 45]), np.array([100, 100])
    narrow, wide = gap_interval(x, n, 0.8), gap_interval(x, n, 0.99)
    assert wide[0] < narrow[0] < 0.15 < narrow[1] < wide[1]


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
