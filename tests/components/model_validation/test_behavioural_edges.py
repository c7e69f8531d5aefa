"""Behavioural tests at, just inside and just outside their limits, with stub scorers of known slopes.

Probabilities are sums of powers-of-two fractions, so every per-row change, mean
and pass fraction the gate compares is exact.
"""

import math

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError

from components.model_validation.behavioural import check_suite, run_directional, run_invariance, run_suite
from components.model_validation.config import BehaviouralSuite, DirectionalTest, InvarianceTest
from tests.support.gate_inputs import numeric_spec, stub_scorer

SPEC = numeric_spec("x", "noise", categorical={"region": ("n", "s")})
ROWS = [f"r{i}" for i in range(8)]


def below(value: float) -> float:
    return float(np.nextafter(value, -math.inf))


def above(value: float) -> float:
    return float(np.nextafter(value, math.inf))


def frame(x: list[float], noise: list[float], region: list[str] | None = None) -> pd.DataFrame:
    return pd.DataFrame({"x": x, "noise": noise, "region": region or ["n", "s"] * 4}, index=ROWS)


# --- invariance by shift: p = 0.25 + x * noise / 32; shifting noise by 1 moves a row by x / 32 ---

SLOPED = stub_scorer(SPEC, lambda m: 0.25 + m[:, 0] * m[:, 1] / 32)
ONE_STEEP_ROW = frame(x=[1] * 7 + [5], noise=[0] * 8)  # changes 1/32 on seven rows, 5/32 on r7
MEAN_ABS = (7 / 32 + 5 / 32) / 8  # 0.046875
MAX_ABS = 5 / 32  # 0.15625


def shift_test(**limits: float) -> InvarianceTest:
    return InvarianceTest(
        feature="noise",
        perturbation="shift",
        shift=1.0,
        **{"max_mean_abs_change": 1.0, "max_abs_change": 1.0, **limits},
    )


def test_invariance_measures_mean_and_max_change_exactly() -> None:
    result = run_invariance(SLOPED, ONE_STEEP_ROW, shift_test(), seed=0)
    assert (
        result.kind == "invariance"
        and result.feature == "noise"
        and result.name == "invariance:noise:shift +1"
    )
    assert result.n_rows == 8
    assert result.mean_abs_change == MEAN_ABS and result.max_abs_change == MAX_ABS
    assert result.mean_change == MEAN_ABS  # every change is upward
    assert result.pass_fraction == 1.0 and result.passed


def test_mean_change_exactly_at_its_limit_passes() -> None:
    assert run_invariance(SLOPED, ONE_STEEP_ROW, shift_test(max_mean_abs_change=MEAN_ABS), seed=0).passed


def test_mean_change_inside_its_limit_passes() -> None:
    assert run_invariance(
        SLOPED, ONE_STEEP_ROW, shift_test(max_mean_abs_change=above(MEAN_ABS)), seed=0
    ).passed


def test_mean_change_just_over_its_limit_is_a_violation_naming_value_limit_and_worst_row() -> None:
    limit = below(MEAN_ABS)
    result = run_invariance(SLOPED, ONE_STEEP_ROW, shift_test(max_mean_abs_change=limit), seed=0)
    (violation,) = result.violations
    assert (violation.check, violation.subject, violation.metric) == (
        "behavioural",
        "invariance:noise:shift +1",
        "mean_abs_change",
    )
    assert violation.value == MEAN_ABS and violation.threshold == limit and violation.bound == "max"
    assert violation.detail == "8 rows; largest change +0.1562 at row r7"
    assert not result.passed


def test_one_row_of_eight_exactly_at_the_single_row_limit_passes() -> None:
    assert run_invariance(SLOPED, ONE_STEEP_ROW, shift_test(max_abs_change=MAX_ABS), seed=0).passed


def test_one_row_of_eight_just_over_the_single_row_limit_is_a_violation() -> None:
    limit = below(MAX_ABS)
    result = run_invariance(SLOPED, ONE_STEEP_ROW, shift_test(max_abs_change=limit), seed=0)
    (violation,) = result.violations
    assert violation.metric == "max_abs_change"
    assert violation.value == MAX_ABS and violation.threshold == limit
    assert (
        violation.message
        == "invariance:noise:shift +1: max_abs_change 0.1562 > max 0.1562 (8 rows; largest change +0.1562 at row r7)"
    )
    assert result.pass_fraction == 7 / 8  # only r7 is beyond the single-row limit


def test_rows_exactly_at_the_single_row_limit_count_as_within_it() -> None:
    result = run_invariance(SLOPED, ONE_STEEP_ROW, shift_test(max_abs_change=1 / 32), seed=0)
    assert result.pass_fraction == 7 / 8


def test_both_invariance_limits_broken_are_both_reported() -> None:
    result = run_invariance(
        SLOPED, ONE_STEEP_ROW, shift_test(max_mean_abs_change=0.0, max_abs_change=0.0), seed=0
    )
    assert [v.metric for v in result.violations] == ["mean_abs_change", "max_abs_change"]


def test_downward_changes_count_by_their_size() -> None:
    falling = stub_scorer(SPEC, lambda m: 0.75 - m[:, 0] * m[:, 1] / 32)
    result = run_invariance(falling, ONE_STEEP_ROW, shift_test(max_abs_change=below(MAX_ABS)), seed=0)
    assert result.mean_change == -MEAN_ABS and result.mean_abs_change == MEAN_ABS
    assert result.violations[0].detail == "8 rows; largest change -0.1562 at row r7"


def test_rows_missing_the_shifted_feature_are_left_out() -> None:
    data = frame(x=[1] * 7 + [5], noise=[0] * 7 + [math.nan])
    result = run_invariance(SLOPED, data, shift_test(), seed=0)
    assert result.n_rows == 7
    assert result.max_abs_change == 1 / 32


# --- invariance by permutation ---


def test_a_model_ignoring_the_permuted_feature_passes_a_zero_limit() -> None:
    ignores_region = stub_scorer(SPEC, lambda m: 0.25 + m[:, 0] / 32)
    test = InvarianceTest(feature="region", max_mean_abs_change=0.0, max_abs_change=0.0)
    result = run_invariance(ignores_region, frame(x=list(range(8)), noise=[0] * 8), test, seed=0)
    assert result.passed and result.max_abs_change == 0.0 and result.n_rows == 8


def test_a_model_using_the_permuted_feature_fails() -> None:
    uses_region = stub_scorer(SPEC, lambda m: 0.25 + (m[:, 2] == 1) / 8)  # region 'n' adds 1/8
    test = InvarianceTest(feature="region", max_mean_abs_change=1.0, max_abs_change=0.0625)
    data = frame(x=[0] * 8, noise=[0] * 8, region=["n"] * 4 + ["s"] * 4)
    result = run_invariance(uses_region, data, test, seed=0)
    assert result.max_abs_change == 0.125  # some row swapped region
    assert [v.metric for v in result.violations] == ["max_abs_change"]


# --- directional: p = 0.5 + x * noise / 16; adding 1 to x moves a row by noise / 16 ---

DIRECTED = stub_scorer(SPEC, lambda m: 0.5 + m[:, 0] * m[:, 1] / 16)
ONE_WRONG_ROW = frame(x=[0] * 8, noise=[1] * 7 + [-1])  # r7 falls by 1/16, the others rise by 1/16
STEP = 1 / 16


def rising(**limits: float) -> DirectionalTest:
    return DirectionalTest(
        feature="x",
        delta=1.0,
        expectation="non_decreasing",
        **{"tolerance": 0.0, "min_pass_fraction": 0.0, **limits},
    )


def test_a_wrong_way_move_exactly_at_the_tolerance_passes() -> None:
    result = run_directional(DIRECTED, ONE_WRONG_ROW, rising(tolerance=STEP, min_pass_fraction=1.0))
    assert result.pass_fraction == 1.0 and result.passed


def test_a_wrong_way_move_just_over_the_tolerance_fails_that_row() -> None:
    result = run_directional(DIRECTED, ONE_WRONG_ROW, rising(tolerance=below(STEP)))
    assert result.pass_fraction == 7 / 8


def test_pass_fraction_exactly_at_its_minimum_passes() -> None:
    assert run_directional(DIRECTED, ONE_WRONG_ROW, rising(min_pass_fraction=7 / 8)).passed


def test_pass_fraction_inside_its_minimum_passes() -> None:
    assert run_directional(DIRECTED, ONE_WRONG_ROW, rising(min_pass_fraction=below(7 / 8))).passed


def test_one_row_of_eight_moving_the_wrong_way_just_under_the_minimum_is_a_violation() -> None:
    limit = above(7 / 8)
    result = run_directional(DIRECTED, ONE_WRONG_ROW, rising(min_pass_fraction=limit))
    (violation,) = result.violations
    assert (violation.subject, violation.metric, violation.bound) == (
        "directional:x:+1:non_decreasing",
        "pass_fraction",
        "min",
    )
    assert violation.value == 7 / 8 and violation.threshold == limit
    assert violation.detail == (
        "1 of 8 rows moved the wrong way by more than 0; worst -0.0625 at row r7; mean change +0.0469"
    )
    assert result.kind == "directional" and result.n_rows == 8
    assert (
        result.mean_change == 6 / 8 * STEP
        and result.mean_abs_change == STEP
        and result.max_abs_change == STEP
    )


def test_non_increasing_expectation_counts_upward_moves_as_wrong() -> None:
    falling = DirectionalTest(
        feature="x", delta=1.0, expectation="non_increasing", tolerance=0.0, min_pass_fraction=0.5
    )
    result = run_directional(DIRECTED, ONE_WRONG_ROW, falling)
    assert result.pass_fraction == 1 / 8
    (violation,) = result.violations
    assert violation.detail.startswith(
        "7 of 8 rows moved the wrong way by more than 0; worst +0.0625 at row r0"
    )


def test_rows_missing_the_directional_feature_are_left_out() -> None:
    data = frame(x=[0] * 7 + [math.nan], noise=[1] * 7 + [-1])
    result = run_directional(DIRECTED, data, rising(min_pass_fraction=1.0))
    assert result.n_rows == 7 and result.passed


def test_directional_on_a_feature_missing_everywhere_is_an_error() -> None:
    data = frame(x=[math.nan] * 8, noise=[1] * 8)
    with pytest.raises(
        ValueError,
        match=r"behavioural test 'directional:x:\+1:non_decreasing': 'x' is missing in every test row",
    ):
        run_directional(DIRECTED, data, rising())


# --- suites and declarations ---


def test_a_suite_with_one_failing_test_of_three_fails_only_that_test() -> None:
    suite = BehaviouralSuite(
        invariance=(shift_test(max_abs_change=5 / 16),),  # r7 moves by 5/16 under this scorer
        directional=(rising(min_pass_fraction=7 / 8), rising(min_pass_fraction=1.0)),
    )
    data = frame(x=[1] * 7 + [5], noise=[1] * 7 + [-1])
    results = run_suite(DIRECTED, data, suite, seed=0)
    assert [r.kind for r in results] == ["invariance", "directional", "directional"]
    assert [r.passed for r in results] == [True, True, False]


def test_suite_fails_on_an_unknown_feature_before_scoring() -> None:
    def never_called(m: np.ndarray) -> np.ndarray:
        raise AssertionError("scored before the suite was checked")

    scorer = stub_scorer(SPEC, never_called)
    unknown = BehaviouralSuite(invariance=(InvarianceTest(feature="zip"),), directional=())
    with pytest.raises(
        ValueError, match=r"the model has no feature 'zip'; its features are \['x', 'noise', 'region'\]"
    ):
        run_suite(scorer, frame([0] * 8, [0] * 8), unknown, seed=0)
    categorical = BehaviouralSuite(
        invariance=(), directional=(DirectionalTest(feature="region", delta=1, expectation="non_decreasing"),)
    )
    with pytest.raises(
        ValueError, match=r"adds a number to 'region', which is categorical.*\['x', 'noise'\]"
    ):
        check_suite(scorer, categorical)
    shifted_category = BehaviouralSuite(
        invariance=(InvarianceTest(feature="region", perturbation="shift", shift=1),), directional=()
    )
    with pytest.raises(ValueError, match="which is categorical"):
        check_suite(scorer, shifted_category)
    assert (
        check_suite(scorer, BehaviouralSuite(invariance=(InvarianceTest(feature="region"),), directional=()))
        is None
    )


def test_declarations_reject_no_op_perturbations() -> None:
    with pytest.raises(ValidationError, match="uses perturbation 'shift' but shift is 0"):
        InvarianceTest(feature="x", perturbation="shift")
    with pytest.raises(ValidationError, match="has delta 0"):
        DirectionalTest(feature="x", delta=0.0, expectation="non_decreasing")
    with pytest.raises(ValidationError, match="min_pass_fraction"):
        DirectionalTest(feature="x", delta=1.0, expectation="non_decreasing", min_pass_fraction=1.5)


def test_violations_of_both_kinds_are_behavioural_and_name_their_test() -> None:
    invariance = run_invariance(SLOPED, ONE_STEEP_ROW, shift_test(max_abs_change=0.0), seed=0)
    directional = run_directional(DIRECTED, ONE_WRONG_ROW, rising(min_pass_fraction=1.0))
    assert [v.check for v in (*invariance.violations, *directional.violations)] == [
        "behavioural",
        "behavioural",
    ]
    assert directional.name == "directional:x:+1:non_decreasing" and directional.feature == "x"


def test_only_rows_strictly_beyond_the_tolerance_are_counted_as_wrong() -> None:
    data = frame(x=[0] * 8, noise=[1] * 6 + [-1, -0.5])  # r6 falls by 1/16, r7 by exactly the tolerance 1/32
    result = run_directional(DIRECTED, data, rising(tolerance=1 / 32, min_pass_fraction=1.0))
    assert result.pass_fraction == 7 / 8
    assert result.violations[0].detail.startswith(
        "1 of 8 rows moved the wrong way by more than 0.03125; worst -0.0625 at row r6"
    )


def test_numeric_perturbations_of_a_categorical_feature_are_refused_when_run_directly() -> None:
    data = frame([0] * 8, [0] * 8)
    with pytest.raises(ValueError, match="adds a number to 'region', which is categorical"):
        run_invariance(SLOPED, data, InvarianceTest(feature="region", perturbation="shift", shift=1), seed=0)
    with pytest.raises(ValueError, match="adds a number to 'region', which is categorical"):
        run_directional(
            SLOPED, data, DirectionalTest(feature="region", delta=1, expectation="non_decreasing")
        )


def test_a_permutation_keeps_the_mix_of_values_so_the_mean_change_is_zero() -> None:
    uses_region = stub_scorer(SPEC, lambda m: 0.25 + (m[:, 2] == 1) / 8)
    data = frame(x=[0] * 8, noise=[0] * 8, region=["n"] * 4 + ["s"] * 4)
    result = run_invariance(uses_region, data, InvarianceTest(feature="region"), seed=0)
    assert result.mean_change == 0.0 and result.mean_abs_change > 0.0


PERMUTED = pd.DataFrame({"x": np.arange(256.0), "noise": np.zeros(256), "region": ["n"] * 256})
X_SLOPE = stub_scorer(SPEC, lambda m: m[:, 0] / 1024)


def test_a_permutation_is_reproducible_from_its_seed() -> None:
    test = InvarianceTest(feature="x")
    first, again = (run_invariance(X_SLOPE, PERMUTED, test, seed=3) for _ in range(2))
    assert first.mean_abs_change == again.mean_abs_change and first.max_abs_change == again.max_abs_change
    assert run_invariance(X_SLOPE, PERMUTED, test, seed=4).mean_abs_change != first.mean_abs_change


def test_each_invariance_test_of_a_suite_gets_its_own_seed() -> None:
    test = InvarianceTest(feature="x")
    results = run_suite(X_SLOPE, PERMUTED, BehaviouralSuite(invariance=(test, test), directional=()), seed=5)
    assert [r.mean_abs_change for r in results] == [
        run_invariance(X_SLOPE, PERMUTED, test, seed=5).mean_abs_change,
        run_invariance(X_SLOPE, PERMUTED, test, seed=6).mean_abs_change,
    ]
