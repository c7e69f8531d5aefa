"""The drift judge, in-process, at its edges: each verdict and the estimate, on hand-built profiles and
counts (no model, no registry). Numeric and categorical features judged by the method their sample size
or settings choose, against the threshold that applies (a p-value for a test, a distance otherwise), the
scores' drift, the label-free performance estimate and the realised performance, and dataset drift as a
share of features counted exactly. The window and the method are in test_drift_judge_windows.py, the
decision and its reasons in test_drift_judge_decisions.py."""

from __future__ import annotations

import numpy as np
import pytest

from mlops.model.reference_profile import (
    CategoricalProfile,
    NumericProfile,
    ReferenceProfile,
    numeric_profile,
)
from mlops.monitoring import stats
from mlops.monitoring.drift_result import FeatureDrift
from mlops.monitoring.drift_settings import DriftSettings
from mlops.monitoring.feature_drift import categorical_drift, judge_prediction, numeric_drift
from mlops.monitoring.judge import dataset_drifted
from mlops.monitoring.performance_estimate import estimate_performance, realised_performance
from mlops.monitoring.request_window import (
    CategoricalCounts,
    NumericCounts,
    WindowError,
    WindowScoreBins,
    empty_summary,
)
from tests.mlops.monitoring.drift_judge_clock import NOW

# --- verdicts -----------------------------------------------------------------------------------------


def counted(profile: NumericProfile, values: list[float]) -> NumericCounts:
    counts = NumericCounts(profile)
    counts.add(np.asarray(values, dtype=float))
    return counts


RNG = np.random.default_rng(7)
REFERENCE = RNG.normal(0.0, 1.0, 400)
WINDOW = RNG.normal(0.3, 1.0, 300)


def test_a_large_numeric_sample_is_judged_by_the_normalised_wasserstein_distance() -> None:
    profile = numeric_profile("income", np.append(REFERENCE, [np.nan] * 100))
    window = counted(profile, [*WINDOW, np.nan])
    drift = numeric_drift(window, DriftSettings(small_sample_rows=100))
    distance = stats.wasserstein_norm(profile, window)
    assert drift == FeatureDrift(
        name="income",
        kind="numeric",
        method="wasserstein",
        score=distance,
        threshold=0.1,
        drifted=distance >= 0.1,
        reference_missing_rate=0.2,
        window_missing_rate=1 / 301,
        statistic=distance,
        p_value=None,
        reference_rows=400,
        window_rows=300,
        rule="wasserstein distance >= 0.1 (auto: 400 reference and 300 window values, both above "
        "drift.small_sample_rows 100)",
    )


def test_a_small_numeric_sample_is_judged_by_the_ks_test_at_p_value_whatever_its_distance_threshold() -> None:
    profile = numeric_profile("income", REFERENCE)
    window = counted(profile, list(WINDOW))
    settings = DriftSettings(feature_thresholds={"income": 0.3}, p_value=0.01)
    drift = numeric_drift(window, settings)
    statistic, p_value = stats.ks_binned(np.asarray(profile.counts), window.counts)
    assert (drift.method, drift.score, drift.statistic, drift.p_value) == ("ks", p_value, statistic, p_value)
    assert drift.threshold == 0.01 and drift.drifted == (p_value < 0.01)
    assert drift.rule.startswith("ks p-value < 0.01 (auto: 400 reference and 300 window values, the fewer")


def test_a_named_method_uses_the_features_threshold_then_the_methods() -> None:
    profile = numeric_profile("income", REFERENCE)
    window = counted(profile, list(WINDOW))
    named = DriftSettings(numeric_method="wasserstein", feature_thresholds={"income": 0.5})
    assert numeric_drift(window, named).threshold == 0.5
    assert (
        numeric_drift(
            window, DriftSettings(numeric_method="wasserstein", wasserstein_threshold=0.2)
        ).threshold
        == 0.2
    )
    ks = numeric_drift(
        window, DriftSettings(feature_methods={"income": "ks"}, feature_thresholds={"income": 0.2})
    )
    assert (ks.method, ks.threshold) == ("ks", 0.2)


def test_a_test_given_a_distance_threshold_is_refused() -> None:
    profile = numeric_profile("income", REFERENCE)
    window = counted(profile, list(WINDOW))
    settings = DriftSettings(numeric_method="ks", feature_thresholds={"income": 1.0})
    with pytest.raises(WindowError) as caught:
        numeric_drift(window, settings)
    assert str(caught.value) == (
        "feature 'income' is judged by ks, whose threshold is a p-value, but drift.feature_thresholds gives it "
        "1.0: set a p-value below 1 or name a distance"
    )


@pytest.mark.parametrize("method", ["jensenshannon", "psi", "ks", "chisquare"])
def test_each_named_numeric_method_scores_as_the_statistics_do(method) -> None:
    profile = numeric_profile("income", REFERENCE)
    window = counted(profile, list(WINDOW))
    drift = numeric_drift(window, DriftSettings(feature_methods={"income": method}))
    reference, current = np.asarray(profile.counts, dtype=float), window.counts.astype(float)
    expected = {
        "jensenshannon": (stats.jensenshannon(reference, current), None),
        "psi": (stats.psi(*stats.deciles(reference, current)), None),
        "ks": stats.ks_binned(np.asarray(profile.counts), window.counts)[::-1],
        "chisquare": stats.chi_square(np.asarray(profile.counts), window.counts)[::-1],
    }[method]
    assert drift.method == method and drift.score == expected[0]
    assert drift.p_value == (expected[0] if method in ("ks", "chisquare") else None)


def test_psi_of_a_discrete_feature_uses_its_own_bins() -> None:
    values = np.repeat(np.arange(15.0), 50)
    profile = numeric_profile("children", values)
    assert profile.discrete and len(profile.edges) == 15  # more bins than deciles: not regrouped
    window = counted(profile, list(np.repeat(np.arange(15.0), np.arange(10, 160, 10))))
    drift = numeric_drift(window, DriftSettings(numeric_method="psi"))
    assert drift.score == stats.psi(np.asarray(profile.counts, dtype=float), window.counts.astype(float))


@pytest.mark.parametrize(("distinct", "as_categories"), [(5, True), (6, False)])
def test_a_numeric_feature_with_at_most_5_distinct_values_is_judged_as_categories(
    distinct, as_categories
) -> None:
    profile = numeric_profile("children", np.repeat(np.arange(float(distinct)), 400))
    window = counted(profile, list(np.repeat(np.arange(float(distinct)), 300)))
    drift = numeric_drift(window, DriftSettings(small_sample_rows=100))
    assert drift.method == ("jensenshannon" if as_categories else "wasserstein")
    assert drift.kind == "numeric"


def categories(counts: tuple[int, ...], missing: int = 0) -> CategoricalProfile:
    return CategoricalProfile(
        name="region", categories=("a", "b", "c"), counts=counts, rows=sum(counts), missing=missing
    )


def test_a_categorical_feature_is_judged_by_chi_squared_when_small_and_jensen_shannon_when_large() -> None:
    profile = categories((30, 20, 10), missing=20)
    window = CategoricalCounts(profile, counts={"a": 10, "b": 20, "c": 30}, rows=60, missing=0)
    reference, current = stats.categorical_vectors(profile.categories, profile.counts, window.counts)
    small = categorical_drift(window, DriftSettings())
    statistic, p_value = stats.chi_square(reference, current)
    assert (small.name, small.method, small.kind, small.score, small.statistic, small.p_value) == (
        "region",
        "chisquare",
        "categorical",
        p_value,
        statistic,
        p_value,
    )
    assert small.drifted and small.reference_missing_rate == 0.25 and small.window_missing_rate == 0.0
    large = categorical_drift(window, DriftSettings(small_sample_rows=50))
    assert (large.method, large.score, large.p_value) == (
        "jensenshannon",
        stats.jensenshannon(reference, current),
        None,
    )
    psi = categorical_drift(window, DriftSettings(categorical_method="psi"))
    assert (psi.method, psi.score, psi.statistic) == (
        "psi",
        stats.psi(reference, current),
        stats.psi(reference, current),
    )


@pytest.mark.parametrize("method", ["wasserstein", "ks"])
def test_a_categorical_feature_named_a_numeric_method_is_refused(method) -> None:
    window = CategoricalCounts(categories((1, 1, 1)), counts={"a": 1})
    with pytest.raises(WindowError) as caught:
        categorical_drift(window, DriftSettings(feature_methods={"region": method}))
    assert str(caught.value) == (
        f"feature 'region' is categorical; {method} needs numbers: use chisquare, jensenshannon or psi"
    )


def test_a_feature_without_values_on_either_side_has_no_missing_rate() -> None:
    window = CategoricalCounts(CategoricalProfile(name="r", categories=(), counts=(), rows=0, missing=0))
    drift = categorical_drift(window, DriftSettings(categorical_method="jensenshannon"))
    assert (drift.reference_missing_rate, drift.window_missing_rate) == (0.0, 0.0) and not drift.drifted
    only_missing = CategoricalCounts(
        CategoricalProfile(name="r", categories=(), counts=(), rows=0, missing=1), rows=0, missing=1
    )
    drift = categorical_drift(only_missing, DriftSettings(categorical_method="jensenshannon"))
    assert (drift.reference_missing_rate, drift.window_missing_rate) == (1.0, 1.0)


# --- the scores ---------------------------------------------------------------------------------------


def scored(reference_rows: int, window_rows: int) -> tuple[ReferenceProfile, NumericCounts]:
    rng = np.random.default_rng(3)
    score = numeric_profile("prediction", rng.uniform(0, 1, reference_rows))
    profile = ReferenceProfile(created_at="x", rows=reference_rows, numeric=(), categorical=(), score=score)
    window = counted(score, list(rng.uniform(0.1, 1, window_rows)))
    return profile, window


def test_small_samples_of_scores_are_judged_by_ks_and_large_ones_by_their_distance() -> None:
    profile, window = scored(200, 150)
    summary = empty_summary(profile, NOW, NOW, "1")
    summary.score = window
    distance = stats.wasserstein_norm(profile.score, window)
    statistic, p_value = stats.ks_binned(np.asarray(profile.score.counts), window.counts)
    assert judge_prediction(profile, summary, DriftSettings(small_sample_rows=150)) == {
        "method": "ks",
        "score": distance,
        "statistic": statistic,
        "p_value": p_value,
        "threshold": 0.05,
        "drifted": p_value < 0.05,
        "reference_rows": 200,
        "window_rows": 150,
        "rule": "ks p-value < 0.05 (auto: 200 reference and 150 window scores, the fewer at most "
        "drift.small_sample_rows 150)",
    }
    large = judge_prediction(
        profile, summary, DriftSettings(small_sample_rows=149, prediction_threshold=0.07)
    )
    assert large == {
        "method": "wasserstein",
        "score": distance,
        "statistic": distance,
        "p_value": None,
        "threshold": 0.07,
        "drifted": distance >= 0.07,
        "reference_rows": 200,
        "window_rows": 150,
        "rule": "wasserstein distance >= 0.07 (drift.prediction_threshold)",
    }
    named = judge_prediction(profile, summary, DriftSettings(numeric_method="ks"))  # small, but not auto
    assert named["method"] == "wasserstein"


# --- performance ----------------------------------------------------------------------------------------


def test_the_estimate_counts_each_row_as_p_of_a_positive_with_ties_in_a_bin_counting_half() -> None:
    summary = WindowScoreBins()
    summary.add(np.array([0.2, 0.2, 0.8, 0.6]), np.array([0.25, 0.25, 0.75, 0.5]))
    pos, neg = 1.75, 2.25
    # per score bin: its expected positives times (the expected negatives in lower bins + half its own)
    #   bin 200: 0.5 * (0 + 1.5 / 2); bin 600: 0.5 * (1.5 + 0.5 / 2); bin 800: 0.75 * (2.0 + 0.25 / 2)
    above = 0.5 * 0.75 + 0.5 * 1.75 + 0.75 * 2.125
    estimate = estimate_performance(summary)
    assert estimate["roc_auc"] == pytest.approx(above / (pos * neg))
    assert estimate["accuracy"] == (0.75 + 0.75 + 0.75 + 0.5) / 4
    assert estimate["positive_rate"] == pos / 4
    assert set(estimate) == {"accuracy", "roc_auc", "positive_rate"}


def test_one_row_has_an_estimate() -> None:
    summary = WindowScoreBins()
    summary.add(np.array([0.75]), np.array([0.75]))
    assert estimate_performance(summary) == {"accuracy": 0.75, "roc_auc": 0.5, "positive_rate": 0.75}


@pytest.mark.parametrize("calibrated", [[1.0, 1.0], [0.0, 0.0]])
def test_there_is_no_estimate_without_expected_positives_and_negatives(calibrated) -> None:
    summary = WindowScoreBins()
    assert estimate_performance(summary) == {}
    summary.add(np.array([0.3, 0.7]), np.array(calibrated))
    assert estimate_performance(summary) == {}


def test_realised_performance_is_measured_on_the_labelled_rows_at_threshold_one_half() -> None:
    assert realised_performance([]) == {}
    labelled = [(np.array([0.5, 0.4]), np.array([1, 0])), (np.array([0.9, 0.6]), np.array([0, 1]))]
    assert realised_performance(labelled) == {"accuracy": 0.75, "labelled_rows": 4.0, "roc_auc": 0.5}
    one_class = realised_performance([(np.array([0.5, 0.4]), np.array([1, 1]))])
    assert one_class == {"accuracy": 0.5, "labelled_rows": 2.0}


def test_dataset_drift_is_at_least_share_of_the_features_counted_exactly() -> None:
    assert dataset_drifted(10, 20, 0.5) and not dataset_drifted(9, 20, 0.5)
    assert dataset_drifted(3, 10, 0.3)  # 0.3 * 10 is 3.0000000000000004
    assert not dataset_drifted(2, 10, 0.3) and dataset_drifted(1, 1, 1.0)
