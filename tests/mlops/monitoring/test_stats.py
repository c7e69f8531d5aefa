"""Drift scores from bin counts against the same scores computed on raw values (scipy, Evidently)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from scipy import stats as scipy_stats

from mlops.model.reference_profile import categorical_profile, numeric_profile
from mlops.monitoring import stats
from mlops.monitoring.performance_estimate import estimate_performance
from mlops.monitoring.request_window import CategoricalCounts, NumericCounts, WindowScoreBins


def counts_of(profile, values: np.ndarray) -> NumericCounts:  # type: ignore[no-untyped-def]
    counts = NumericCounts(profile)
    for chunk in np.array_split(values, 7):  # streamed in pieces, as files arrive
        counts.add(chunk)
    return counts


def exact(reference: np.ndarray, current: np.ndarray) -> float:
    reference, current = reference[np.isfinite(reference)], current[np.isfinite(current)]
    return scipy_stats.wasserstein_distance(reference, current) / max(reference.std(), 0.001)


def test_wasserstein_is_exact_for_discrete_features_even_beyond_the_reference_range() -> None:
    rng = np.random.default_rng(0)
    reference = rng.poisson(3, 5000).astype(float)
    current = rng.poisson(4.5, 8000).astype(float)  # values above the reference maximum too
    current[:50] = np.nan
    profile = numeric_profile("x", reference)
    assert profile.discrete
    assert stats.wasserstein_norm(profile, counts_of(profile, current)) == pytest.approx(
        exact(reference, current), rel=1e-9
    )


@pytest.mark.parametrize("shift", [0.0, 0.3, 2.0])
def test_wasserstein_of_continuous_features_is_within_2_percent_of_scipy(shift: float) -> None:
    rng = np.random.default_rng(1)
    reference = rng.lognormal(10, 0.5, 5000)
    current = rng.lognormal(10 + shift, 0.5, 20000)
    profile = numeric_profile("income", reference)
    assert not profile.discrete
    got, want = stats.wasserstein_norm(profile, counts_of(profile, current)), exact(reference, current)
    assert got == pytest.approx(want, rel=0.02, abs=0.005)


def test_jensenshannon_and_psi_match_evidently_on_categories() -> None:
    from evidently.legacy.calculations.stattests.jensenshannon import _jensenshannon
    from evidently.legacy.calculations.stattests.psi import _psi
    from evidently.legacy.core import ColumnType

    rng = np.random.default_rng(2)
    reference = pd.Series(rng.choice(list("abcd"), 3000, p=[0.4, 0.3, 0.2, 0.1]))
    current = pd.Series(rng.choice(list("abcde"), 4000, p=[0.1, 0.2, 0.3, 0.3, 0.1]))  # 'e' is new
    profile = categorical_profile("c", reference)
    counts = CategoricalCounts(profile)
    counts.add(pa.array(current.tolist()))
    ref, cur = stats.categorical_vectors(profile.categories, profile.counts, counts.counts)
    js, _ = _jensenshannon(reference, current, ColumnType.Categorical, 0.1)
    psi, _ = _psi(reference, current, ColumnType.Categorical, 0.1)
    assert stats.jensenshannon(ref, cur) == pytest.approx(js, rel=1e-9)
    assert stats.psi(ref, cur) == pytest.approx(psi, rel=1e-9)


def test_cbpe_estimates_match_realised_metrics_when_scores_are_calibrated() -> None:
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(3)
    scores = rng.beta(2, 5, 200_000)
    labels = (rng.random(len(scores)) < scores).astype(int)  # calibrated by construction
    summary = WindowScoreBins()
    summary.add(scores, scores)
    estimate = estimate_performance(summary)
    assert estimate["accuracy"] == pytest.approx(((scores >= 0.5) == labels).mean(), abs=0.005)
    assert estimate["roc_auc"] == pytest.approx(roc_auc_score(labels, scores), abs=0.005)


def test_a_window_with_no_values_scores_nan_not_drift() -> None:
    profile = numeric_profile("x", np.arange(100.0))
    assert np.isnan(stats.jensenshannon(np.asarray(profile.counts, float), np.zeros(len(profile.counts))))
