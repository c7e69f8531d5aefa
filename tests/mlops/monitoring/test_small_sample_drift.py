"""Small samples are judged by statistical tests, not by a distance threshold that their noise passes.

The user's case: sklearn's breast-cancer table (569 rows), split the way training splits it
(78 test rows), profiled the way registration profiles the test split, and the model's own
training rows sent as traffic. Before, the normalised Wasserstein at 0.1 flagged 27 of the
30 features; the KS test (Evidently's choice for a reference of at most 1000 rows) flags none,
and still finds a feature shifted by one standard deviation.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from pydantic import ValidationError
from scipy import stats as scipy_stats
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from components.drift_monitor.monitor import metrics_of
from mlops.data.dataset import DatasetSchema
from mlops.data.features import FeatureSpec
from mlops.model.reference_profile import (
    ReferenceProfile,
    build_profile,
    categorical_profile,
    numeric_profile,
)
from mlops.monitoring import stats
from mlops.monitoring.drift_report import write_html
from mlops.monitoring.drift_result import DriftResult
from mlops.monitoring.drift_settings import DriftSettings
from mlops.monitoring.feature_drift import categorical_drift, numeric_drift
from mlops.monitoring.judge import judge
from mlops.monitoring.request_window import (
    Calibrator,
    CategoricalCounts,
    NumericCounts,
    WindowError,
    add_table,
    empty_summary,
)
from training.config import TrainConfig
from training.data_splits import split_frame

START, END = datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 11, 2, tzinfo=UTC)
SHIFTED = "mean_radius"


@dataclass(frozen=True)
class Cancer:
    train: pd.DataFrame
    profile: ReferenceProfile
    model: object
    features: tuple[str, ...]


@pytest.fixture(scope="module")
def cancer() -> Cancer:
    """The registered version: trained on the train split, profiled on its test split with its own scores."""
    data = load_breast_cancer(as_frame=True)
    frame = data.frame.rename(columns=lambda c: c.replace(" ", "_"))
    features = tuple(c for c in frame.columns if c != "target")
    schema = DatasetSchema(label="target", numeric_features=features)
    splits = split_frame(frame, schema, TrainConfig())
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000))
    model.fit(splits.train[list(features)], splits.train["target"])
    spec = FeatureSpec.fit(splits.train, schema)
    scores = model.predict_proba(splits.test[list(features)])[:, 1]
    profile = build_profile(splits.test, spec, scores, splits.test["target"].to_numpy())
    return Cancer(splits.train, profile, model, features)


def traffic(cancer: Cancer, rows: pd.DataFrame) -> DriftResult:
    """``rows`` served by the model, judged with the default settings."""
    return judged(cancer, rows, DriftSettings())


def judged(cancer: Cancer, rows: pd.DataFrame, settings: DriftSettings) -> DriftResult:
    """``rows`` logged as the server logs them (the model's score beside each), summarised and judged."""
    logged = rows[list(cancer.features)].copy()
    logged["prediction"] = cancer.model.predict_proba(logged[list(cancer.features)])[:, 1]  # type: ignore[attr-defined]
    summary = empty_summary(cancer.profile, START, END, "1")
    add_table(
        summary, pa.Table.from_pandas(logged, preserve_index=False), Calibrator(cancer.profile.calibration)
    )
    return judge("breast-cancer", cancer.profile, summary, settings)


def test_the_users_reference_is_the_78_row_test_split(cancer: Cancer) -> None:
    assert (cancer.profile.rows, len(cancer.train), len(cancer.features)) == (78, 397, 30)


def test_the_models_own_training_rows_are_not_drift(cancer: Cancer) -> None:
    named = DriftSettings(numeric_method="wasserstein")  # a named method is used at every size
    before = judged(cancer, cancer.train, named)
    after = traffic(cancer, cancer.train)
    # The bug: a fixed distance threshold on 78 reference rows flags 27 of 30 undrifted features.
    assert {f.method for f in before.features} == {"wasserstein"}
    assert len(before.drifted_features) == 27 and before.decision == "retrain"
    # Evidently's small-sample rule: the KS test, p < 0.05; none of the 30 features, no retraining.
    assert {f.method for f in after.features} == {"ks"} and after.prediction["method"] == "ks"
    assert after.drifted_features == [] and after.share_drifted == 0.0
    assert not after.prediction_drift and after.decision == "none", after.reasons
    assert min(f.p_value for f in after.features if f.p_value is not None) > 0.05
    # The reason states the test that decided, not the distance that would have read as drift here.
    assert (
        "prediction KS p-value " in after.reasons[0]
        and "(>= 0.05; 78 reference, 397 window scores)" in (after.reasons[0])
    ), after.reasons


def test_a_feature_shifted_by_one_standard_deviation_is_found(cancer: Cancer) -> None:
    drifted = cancer.train.copy()
    drifted[SHIFTED] += drifted[SHIFTED].std()
    result = traffic(cancer, drifted)
    feature = {f.name: f for f in result.features}[SHIFTED]
    assert (
        feature.drifted and feature.method == "ks" and feature.p_value is not None and feature.p_value < 1e-6
    )
    assert result.drifted_features == [SHIFTED]  # 1 of 30: the other features did not move
    assert not result.dataset_drift


def test_half_the_features_shifted_asks_for_a_retraining(cancer: Cancer) -> None:
    drifted = cancer.train.copy()
    moved = list(cancer.features[:15])  # 15 of 30: drift.share 0.5
    drifted[moved] += drifted[moved].std()
    result = traffic(cancer, drifted)
    assert set(result.drifted_features) == set(moved)
    assert result.dataset_drift and result.decision == "retrain"
    assert result.reasons[0].startswith("dataset drift: 50% of features drifted")


def test_each_report_entry_says_which_test_its_figures_and_why(cancer: Cancer) -> None:
    entry = {f["name"]: f for f in traffic(cancer, cancer.train).as_dict()["features"]}["worst_area"]
    assert entry["method"] == "ks" and entry["threshold"] == 0.05 and entry["score"] == entry["p_value"]
    profile = {p.name: p for p in cancer.profile.numeric}["worst_area"]
    assert (
        profile.discrete
    )  # every test value is an edge: the reference rows are the edges times their counts
    rows = np.repeat(profile.edges, profile.counts[: len(profile.edges)])
    raw = scipy_stats.ks_2samp(rows, cancer.train["worst_area"])
    assert entry["statistic"] <= raw.statistic + 1e-12  # the binned D: a lower bound of the raw D
    assert entry["statistic"] == pytest.approx(raw.statistic, abs=1 / 78)
    assert entry["rule"] == (
        "ks p-value < 0.05 (auto: 78 reference and 397 window values, the fewer at most "
        "drift.small_sample_rows 1000)"
    )
    assert (entry["reference_rows"], entry["window_rows"]) == (78, 397)


def normal_counts(reference_rows: int, window_rows: int, seed: int = 0) -> NumericCounts:
    rng = np.random.default_rng(seed)
    counts = NumericCounts(numeric_profile("x", rng.normal(size=reference_rows)))
    counts.add(rng.normal(size=window_rows))
    return counts


@pytest.mark.parametrize(
    ("reference_rows", "window_rows", "method"),
    [(1000, 2000, "ks"), (1001, 2000, "wasserstein"), (2000, 1000, "ks"), (2000, 1001, "wasserstein")],
)
def test_the_switch_is_at_most_small_sample_rows_on_either_side(
    reference_rows: int, window_rows: int, method: str
) -> None:
    """Evidently's rule (tests for a reference of at most 1000 rows), the window's size counting too."""
    feature = numeric_drift(normal_counts(reference_rows, window_rows), DriftSettings())
    assert feature.method == method
    assert (feature.p_value is None) == (method == "wasserstein")


def test_categories_are_tested_with_chi_squared_when_small_and_jensen_shannon_when_large() -> None:
    rng = np.random.default_rng(1)
    window = {"a": 600, "b": 700, "c": 700}

    def check(rows: int):  # type: ignore[no-untyped-def]
        counts = CategoricalCounts(categorical_profile("c", rng.choice(["a", "b", "c"], size=rows)))
        counts.counts, counts.rows = dict(window), 2000
        return counts, categorical_drift(counts, DriftSettings())

    (counts, small), (_, large) = check(1000), check(1001)
    assert (small.method, large.method) == ("chisquare", "jensenshannon")
    table = [list(counts.profile.counts), [window[c] for c in counts.profile.categories]]
    raw = scipy_stats.chi2_contingency(table, correction=False)
    assert (small.statistic, small.p_value) == (pytest.approx(raw.statistic), pytest.approx(raw.pvalue))


def test_a_p_value_at_the_threshold_is_no_drift_just_above_it_is() -> None:
    counts = normal_counts(300, 300, seed=2)
    counts.add(np.full(40, 1.5))  # enough of a bump for a p-value in the middle of (0, 1)
    p = stats.ks_binned(np.asarray(counts.profile.counts), counts.counts)[1]
    assert 0.001 < p < 0.9
    at = numeric_drift(counts, DriftSettings(p_value=p))
    above = numeric_drift(counts, DriftSettings(p_value=float(np.nextafter(p, 1))))
    assert at.p_value == p and not at.drifted  # p < threshold drifts; equal does not (Evidently)
    assert above.drifted


def test_the_binned_ks_equals_scipy_on_the_raw_values_when_the_profile_holds_every_value() -> None:
    rng = np.random.default_rng(3)
    reference = rng.integers(0, 60, size=200).astype(float)
    profile = numeric_profile("x", reference)
    for window_rows, method in ((500, "exact"), (20_000, "asymp")):
        window = rng.integers(5, 65, size=window_rows).astype(float)
        kept = window[np.isin(window, reference)]  # values at the reference's: the binned D is the raw D
        counts = NumericCounts(profile)
        counts.add(kept)
        d, p = stats.ks_binned(np.asarray(profile.counts), counts.counts)
        raw = scipy_stats.ks_2samp(reference, kept, method=method)
        assert d == pytest.approx(raw.statistic, abs=1e-12)
        assert p == pytest.approx(raw.pvalue, rel=1e-9)


def test_two_categories_give_the_two_proportion_z_test() -> None:
    """Chi-squared homogeneity without continuity correction is Evidently's z-test for binary columns (chi² = z²)."""
    reference, current = np.array([30.0, 48.0]), np.array([200.0, 197.0])
    statistic, p = stats.chi_square(reference, current)
    n1, n2 = reference.sum(), current.sum()
    pooled = (reference[0] + current[0]) / (n1 + n2)
    z = (reference[0] / n1 - current[0] / n2) / np.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    assert statistic == pytest.approx(z**2, rel=1e-12)
    assert p == pytest.approx(2 * scipy_stats.norm.sf(abs(z)), rel=1e-9)
    assert stats.chi_square(np.array([5.0, 0.0]), np.array([9.0, 0.0])) == (
        0.0,
        1.0,
    )  # one category: no evidence


def test_a_distance_threshold_set_per_feature_does_not_become_a_p_value() -> None:
    counts = normal_counts(100, 100, seed=4)
    auto = numeric_drift(counts, DriftSettings(feature_thresholds={"x": 5.0}))
    assert auto.method == "ks" and auto.threshold == 0.05  # set for the distance of large samples
    named = numeric_drift(counts, DriftSettings(feature_methods={"x": "ks"}, feature_thresholds={"x": 0.01}))
    assert named.threshold == 0.01
    with pytest.raises(ValidationError, match="a test's threshold is a p-value, below 1"):
        DriftSettings(feature_methods={"x": "ks"}, feature_thresholds={"x": 5.0})
    with pytest.raises(ValidationError, match="categorical_method ks: needs numbers"):
        DriftSettings(categorical_method="ks")
    with pytest.raises(WindowError, match="judged by ks, whose threshold is a p-value"):
        numeric_drift(counts, DriftSettings(numeric_method="ks", feature_thresholds={"x": 5.0}))


def test_small_sample_rows_zero_keeps_the_distance_at_every_size() -> None:
    feature = numeric_drift(normal_counts(50, 50), DriftSettings(small_sample_rows=0))
    assert feature.method == "wasserstein" and feature.rule.startswith("wasserstein distance >= 0.1 (auto:")


def test_a_p_value_and_a_distance_never_share_a_metric_series(cancer: Cancer) -> None:
    tested = metrics_of(traffic(cancer, cancer.train))
    measured = metrics_of(judged(cancer, cancer.train, DriftSettings(numeric_method="wasserstein")))
    assert "drift_worst_area" not in tested and 0.05 < tested["drift_worst_area_p_value"] <= 1
    assert tested["prediction_drift_p_value"] > 0.05 and "prediction_drift_score" in tested
    assert "drift_worst_area_p_value" not in measured and measured["drift_worst_area"] >= 0.1
    assert "prediction_drift_p_value" not in measured


def test_the_html_report_shows_the_tests_the_check_used(cancer: Cancer, tmp_path: Path) -> None:
    rows = cancer.train[list(cancer.features)].copy()
    rows["prediction"] = cancer.model.predict_proba(rows)[:, 1]  # type: ignore[attr-defined]
    result = traffic(cancer, cancer.train)
    page = write_html(cancer.profile, rows, result, DriftSettings(), tmp_path / "report.html").read_text()
    assert "K-S p_value" in page and "Wasserstein" not in page
