"""The drift judge, in-process, at its edges: the window's bounds, the method chosen by sample size, each
verdict's threshold and rule, the estimate, dataset drift, and the decision's reasons, on hand-built
profiles and counts (no model, no registry)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import numpy as np
import pytest

from mlops.model.reference_profile import (
    CategoricalProfile,
    NumericProfile,
    ReferenceProfile,
    numeric_profile,
)
from mlops.monitoring import stats
from mlops.monitoring.drift_reasons import drift_reasons, no_action_reason, performance_reasons
from mlops.monitoring.drift_result import DriftResult, FeatureDrift
from mlops.monitoring.drift_settings import DriftSettings, WindowSettings
from mlops.monitoring.feature_drift import (
    categorical_drift,
    choose_method,
    drifted_by,
    judge_prediction,
    numeric_drift,
    rule_text,
    small_sample,
)
from mlops.monitoring.judge import dataset_drifted
from mlops.monitoring.performance_estimate import estimate_performance, realised_performance
from mlops.monitoring.request_window import (
    CategoricalCounts,
    NumericCounts,
    ScoreSummary,
    WindowError,
    WindowSummary,
    empty_summary,
)
from mlops.monitoring.window_span import parse_instant, window_bounds

NOW = datetime(2026, 11, 23, 15, 0, tzinfo=UTC)
SMALL = DriftSettings(small_sample_rows=10)


# --- the window ---------------------------------------------------------------------------------------


def test_an_instant_is_read_as_iso_8601_in_utc_unless_it_names_its_zone() -> None:
    assert parse_instant(" 2026-11-23T15:00:00Z ", "until") == NOW
    assert parse_instant("2026-11-23T15:00:00", "until") == NOW
    two = timezone(timedelta(hours=2))
    assert parse_instant("2026-11-23T17:00:00+02:00", "until") == datetime(2026, 11, 23, 17, tzinfo=two)
    assert parse_instant("2026-11-23T17:00:00+02:00", "until").utcoffset() == timedelta(hours=2)


@pytest.mark.parametrize("setting", ["since", "until"])
def test_a_bad_instant_is_refused_naming_the_setting_and_an_example(setting) -> None:
    with pytest.raises(WindowError) as caught:
        window_bounds(WindowSettings(**{setting: "yesterday"}), NOW)  # type: ignore[arg-type]
    assert (
        str(caught.value) == f"{setting} 'yesterday' is not an ISO 8601 time; use e.g. 2026-11-23T15:00:00Z"
    )


def test_the_window_defaults_to_the_24_hours_before_until_or_now() -> None:
    assert window_bounds(WindowSettings(), NOW) == (NOW - timedelta(hours=24), NOW)
    assert window_bounds(WindowSettings(until="2026-11-23T15:00:00Z"), NOW + timedelta(days=3)) == (
        NOW - timedelta(hours=24),
        NOW,
    )
    assert window_bounds(WindowSettings(since="2026-11-23T14:59:59Z"), NOW) == (
        NOW - timedelta(seconds=1),
        NOW,
    )
    start, end = window_bounds(WindowSettings())
    assert end - start == timedelta(hours=24) and abs(end - datetime.now(UTC)) < timedelta(minutes=1)


@pytest.mark.parametrize("since", ["2026-11-23T15:00:00Z", "2026-11-23T15:00:01Z"])
def test_a_window_that_does_not_start_before_it_ends_is_refused(since) -> None:
    with pytest.raises(WindowError) as caught:
        window_bounds(WindowSettings(since=since, until="2026-11-23T15:00:00Z"))
    start = parse_instant(since, "since")
    assert str(caught.value) == (
        f"since {start.isoformat()} is not before until 2026-11-23T15:00:00+00:00; the window is empty"
    )


# --- the method -----------------------------------------------------------------------------------------


def test_a_sample_is_small_when_the_fewer_values_are_at_most_small_sample_rows() -> None:
    assert small_sample(10, 5000, SMALL) and small_sample(5000, 10, SMALL)
    assert not small_sample(11, 11, SMALL)
    assert small_sample(1000, 1000, DriftSettings()) and not small_sample(1001, 5000, DriftSettings())


@pytest.mark.parametrize(
    ("categorical", "rows", "method", "why"),
    [
        (False, 10, "ks", "10 reference and 10 window values, the fewer at most drift.small_sample_rows 10"),
        (
            True,
            10,
            "chisquare",
            "10 reference and 10 window values, the fewer at most drift.small_sample_rows 10",
        ),
        (
            False,
            11,
            "wasserstein",
            "11 reference and 11 window values, both above drift.small_sample_rows 10",
        ),
        (
            True,
            11,
            "jensenshannon",
            "11 reference and 11 window values, both above drift.small_sample_rows 10",
        ),
    ],
)
def test_auto_chooses_a_test_for_small_samples_and_a_distance_for_large_ones(
    categorical, rows, method, why
) -> None:
    assert choose_method("f", categorical, rows, rows, SMALL, "numeric_method") == (
        method,
        True,
        f"auto: {why}",
    )


def test_a_named_method_is_used_at_every_size_and_says_which_setting_named_it() -> None:
    settings = DriftSettings(numeric_method="psi", feature_methods={"income": "wasserstein", "age": "auto"})
    assert choose_method("income", False, 5, 5, settings, "numeric_method") == (
        "wasserstein",
        False,
        "drift.feature_methods['income']",
    )
    assert choose_method("age", False, 5, 5, settings, "numeric_method") == (
        "psi",
        False,
        "drift.numeric_method",
    )
    categorical = DriftSettings(categorical_method="psi")
    assert choose_method("region", True, 5, 5, categorical, "categorical_method") == (
        "psi",
        False,
        "drift.categorical_method",
    )


@pytest.mark.parametrize(
    ("named", "method"), [("ks", "chisquare"), ("wasserstein", "jensenshannon"), ("psi", "jensenshannon")]
)
def test_a_numeric_method_on_few_distinct_values_judges_them_as_categories(named, method) -> None:
    settings = DriftSettings(numeric_method=named)
    assert choose_method("n", True, 5000, 5000, settings, "numeric_method") == (
        method,
        False,
        "drift.numeric_method (at most 5 distinct values: as categories)",
    )
    per_feature = DriftSettings(feature_methods={"n": named})  # named for the feature: used as named
    assert choose_method("n", True, 5000, 5000, per_feature, "numeric_method")[0] == named


def test_drift_is_a_p_value_below_its_threshold_or_a_distance_at_or_above_it_and_never_nan() -> None:
    assert drifted_by("ks", 0.049, 0.05) and not drifted_by("ks", 0.05, 0.05)
    assert drifted_by("chisquare", 0.01, 0.05) and not drifted_by("chisquare", 0.5, 0.05)
    assert drifted_by("wasserstein", 0.1, 0.1) and not drifted_by("wasserstein", 0.099, 0.1)
    assert drifted_by("psi", 0.2, 0.1) and drifted_by("jensenshannon", 0.1, 0.1)
    assert not drifted_by("ks", float("nan"), 0.05) and not drifted_by("wasserstein", float("nan"), 0.1)


def test_the_rule_says_what_drifts_and_what_chose_the_method() -> None:
    assert rule_text("ks", 0.05, "auto: x") == "ks p-value < 0.05 (auto: x)"
    assert rule_text("chisquare", 0.001, "s") == "chisquare p-value < 0.001 (s)"
    assert rule_text("wasserstein", 0.125, "drift.numeric_method") == (
        "wasserstein distance >= 0.125 (drift.numeric_method)"
    )


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
    summary = ScoreSummary()
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
    summary = ScoreSummary()
    summary.add(np.array([0.75]), np.array([0.75]))
    assert estimate_performance(summary) == {"accuracy": 0.75, "roc_auc": 0.5, "positive_rate": 0.75}


@pytest.mark.parametrize("calibrated", [[1.0, 1.0], [0.0, 0.0]])
def test_there_is_no_estimate_without_expected_positives_and_negatives(calibrated) -> None:
    summary = ScoreSummary()
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


# --- reasons ------------------------------------------------------------------------------------------


def feature(name: str, drifted: bool) -> FeatureDrift:
    return FeatureDrift(name, "numeric", "ks", 0.01 if drifted else 0.5, 0.05, drifted, 0.0, 0.0)


def result(**values: object) -> DriftResult:
    base: dict[str, object] = {
        "model_name": "m",
        "version": "3",
        "start": "s",
        "end": "e",
        "rows": 100,
        "files": 1,
        "features": [feature("income", True), feature("age", False), feature("debt", True)],
        "share_drifted": 2 / 3,
        "dataset_drift": True,
        "prediction_score": 0.1234,
        "prediction_drift": True,
        "estimated": {},
        "reference_metrics": {},
        "prediction": {"method": "wasserstein"},
    }
    return DriftResult(**{**base, **values})  # type: ignore[arg-type]


def test_drift_reasons_name_the_share_the_distance_and_the_drifted_features() -> None:
    assert drift_reasons(result(), DriftSettings(prediction_threshold=0.12)) == [
        "dataset drift: 67% of features drifted (>= 50%): income, debt",
        "prediction drift: score distance 0.123 >= 0.12 (drifted features: income, debt)",
    ]


def test_a_ks_prediction_drift_names_its_p_value_and_sizes() -> None:
    prediction = {
        "method": "ks",
        "p_value": 0.001234,
        "threshold": 0.05,
        "reference_rows": 78,
        "window_rows": 90,
    }
    reasons = drift_reasons(result(dataset_drift=False, prediction=prediction), DriftSettings())
    assert reasons == [
        "prediction drift: scores' KS p-value 0.00123 < 0.05 (78 reference, 90 window scores) (drifted features: "
        "income, debt)"
    ]


def test_prediction_drift_is_no_reason_when_switched_off_and_no_drift_names_none() -> None:
    assert drift_reasons(result(), DriftSettings(trigger_on_prediction_drift=False)) == [
        "dataset drift: 67% of features drifted (>= 50%): income, debt"
    ]
    calm = result(features=[feature("age", False)], dataset_drift=False, prediction_drift=True)
    assert drift_reasons(calm, DriftSettings())[0].endswith("(drifted features: none)")
    assert drift_reasons(result(dataset_drift=False, prediction_drift=False), DriftSettings()) == []


BANDS = {"value": 0.8, "low": 0.75, "high": 0.85}


def test_an_estimated_drop_leaving_the_versions_test_band_is_a_reason() -> None:
    dropped = result(
        reference_bands={"roc_auc": BANDS},
        estimated_bands={"roc_auc": {"value": 0.7, "low": 0.65, "high": 0.7499}},
    )
    assert performance_reasons(dropped, DriftSettings()) == [
        "estimated roc_auc drop 0.100: label-free estimate 0.700 [0.650, 0.750] below version 3's test 0.800 "
        "[0.750, 0.850] (95% bands); drifted features: income, debt"
    ]
    touching = result(
        reference_bands={"roc_auc": BANDS},
        estimated_bands={"roc_auc": {"value": 0.7, "low": 0.65, "high": 0.75}},
    )
    assert performance_reasons(touching, DriftSettings()) == []
    assert performance_reasons(result(estimated_bands={"roc_auc": BANDS}), DriftSettings()) == []


def test_a_realised_drop_needs_enough_labelled_rows_and_says_when_the_estimate_missed_it() -> None:
    realised = {"value": 0.6, "low": 0.55, "high": 0.65}
    calm = [feature("age", False)]
    few = result(
        features=calm,
        reference_bands={"accuracy": BANDS},
        realised_bands={"accuracy": realised},
        realised={"labelled_rows": 99.0},
    )
    settings = DriftSettings(performance_metric="accuracy", confidence=0.9)
    assert performance_reasons(few, settings) == []
    unlabelled = result(
        features=calm, reference_bands={"accuracy": BANDS}, realised_bands={"accuracy": realised}
    )
    assert performance_reasons(unlabelled, settings.model_copy(update={"min_labelled_rows": 1})) == []
    enough = result(
        features=calm,
        reference_bands={"accuracy": BANDS},
        realised_bands={"accuracy": realised},
        realised={"labelled_rows": 100.0},
        estimated_bands={"accuracy": {"value": 0.79, "low": 0.76, "high": 0.82}},
    )
    assert performance_reasons(enough, settings) == [
        "realised accuracy drop 0.200 on 100 labelled rows: 0.600 [0.550, 0.650] below version 3's test "
        "0.800 [0.750, 0.850] (90% bands); the label-free estimate 0.790 [0.760, 0.820] cannot see this drop: "
        "the scores did not move, the relation between features and label did; no feature drifted past its "
        "threshold: the shift moves rows where the model is less certain"
    ]
    enough.estimated_bands = {}
    assert "; the label-free estimate (none) cannot see this drop" in performance_reasons(enough, settings)[0]


def test_both_drops_are_reasons_the_estimate_first() -> None:
    both = result(
        reference_bands={"roc_auc": BANDS},
        estimated_bands={"roc_auc": {"value": 0.7, "low": 0.65, "high": 0.7}},
        realised_bands={"roc_auc": {"value": 0.6, "low": 0.55, "high": 0.65}},
        realised={"labelled_rows": 500.0},
    )
    estimated, realised = performance_reasons(both, DriftSettings())
    assert estimated.startswith("estimated roc_auc drop 0.100")
    assert realised == (
        "realised roc_auc drop 0.200 on 500 labelled rows: 0.600 [0.550, 0.650] below version 3's test 0.800 "
        "[0.750, 0.850] (95% bands); drifted features: income, debt"
    )


def test_no_action_says_why_with_the_estimate_against_the_versions_test() -> None:
    calm = result(
        features=[feature("age", False), feature("income", True)],
        share_drifted=0.5,
        reference_bands={"roc_auc": BANDS},
        estimated_bands={"roc_auc": {"value": 0.79, "low": 0.76, "high": 0.82}},
    )
    assert no_action_reason(calm, DriftSettings(share=0.75), []) == (
        "no drift: 50% of features drifted (< 75%: income), prediction distance 0.123; estimated roc_auc 0.790 "
        "[0.760, 0.820] vs version 3's test 0.800 [0.750, 0.850]"
    )
    assert no_action_reason(
        result(), DriftSettings(trigger="performance"), ["dataset drift: x", "prediction drift: y"]
    ) == (
        "no retraining: drift without a performance drop (dataset drift: x; prediction drift: y), no roc_auc "
        "estimate (drift.trigger performance)"
    )


def test_the_headline_is_the_leading_reason_and_the_report_carries_it() -> None:
    judged = result(decision="retrain", reasons=["first", "second"])
    assert judged.headline == "retrain: first"
    assert result(decision="none", reasons=[]).headline == "none"
    report = judged.as_dict()
    assert report["headline"] == "retrain: first" and report["drifted_features"] == ["income", "debt"]
    assert report["decision"] == "retrain" and report["features"][0]["name"] == "income"


# --- judge ----------------------------------------------------------------------------------------------


def window_of(shift: float) -> tuple[ReferenceProfile, WindowSummary]:
    """A 2-feature profile of 4000 reference rows and a 3000-row window shifted by ``shift`` (large samples)."""
    rng = np.random.default_rng(11)
    income, age = rng.normal(0, 1, 4000), rng.normal(0, 1, 4000)
    scores = rng.uniform(0, 1, 4000)
    profile = ReferenceProfile(
        created_at="x",
        rows=4000,
        numeric=(numeric_profile("income", income), numeric_profile("age", age)),
        categorical=(
            CategoricalProfile(
                name="region", categories=("a", "b"), counts=(2000, 2000), rows=4000, missing=0
            ),
        ),
        score=numeric_profile("prediction", scores),
        metrics={"roc_auc": 0.8, "accuracy": 0.8, "positive_rate": 0.5},
    )
    summary = empty_summary(profile, NOW - timedelta(days=1), NOW, "3")
    summary.numeric[0].add(rng.normal(shift, 1, 3000))
    summary.numeric[1].add(rng.normal(shift, 1, 3000))
    summary.categorical[0].counts = {"a": 1500, "b": 1500} if shift == 0 else {"a": 2900, "b": 100}
    summary.categorical[0].rows = 3000
    window_scores = rng.uniform(0, 1, 3000)
    summary.labelled = [(window_scores[:200], (rng.uniform(0, 1, 200) < window_scores[:200]).astype(int))]
    summary.score.add(window_scores)
    summary.estimate.add(window_scores, window_scores)
    summary.rows, summary.files, summary.other_versions = 3000, 2, {"2": 7}
    summary.summarised_rows, summary.summarised_days = 100, ["2026-11-22"]
    return profile, summary


LARGE = DriftSettings(small_sample_rows=100)


def test_a_calm_window_asks_for_nothing_and_says_why() -> None:
    from mlops.monitoring.judge import judge

    profile, summary = window_of(0.0)
    judged = judge("m", profile, summary, LARGE)
    assert (judged.decision, judged.drifted_features, judged.dataset_drift) == ("none", [], False)
    assert judged.prediction_drift is False and [f.name for f in judged.features] == [
        "income",
        "age",
        "region",
    ]
    assert (
        judged.realised == realised_performance(summary.labelled) and judged.realised["labelled_rows"] == 200
    )
    assert set(judged.realised_bands) == {"accuracy", "roc_auc"}
    assert judged.reasons[0].startswith(
        "no drift: 0% of features drifted (< 50%: none), prediction distance "
    )
    assert (judged.model_name, judged.version, judged.rows, judged.files) == ("m", "3", 3000, 2)
    assert (judged.start, judged.end) == ((NOW - timedelta(days=1)).isoformat(), NOW.isoformat())
    assert judged.other_versions == {"2": 7} and judged.trigger == "both"
    assert (judged.rows_from_summaries, judged.summary_days) == (100, ["2026-11-22"])
    assert judged.reference_metrics == profile.metrics
    assert set(judged.reference_bands) == {"accuracy", "roc_auc"} and judged.findings == []
    from mlops.monitoring.performance_bands import estimated_bands

    bands = estimated_bands(
        summary.estimate,
        judged.estimated,
        profile.calibration,
        profile.score,
        LARGE.confidence,
        LARGE.bootstrap_samples,
    )
    assert judged.estimated_bands == {name: band.as_dict() for name, band in bands.items()} != {}
    assert (
        judged.prediction["method"] == "wasserstein" and judged.prediction_score == judged.prediction["score"]
    )


@pytest.mark.parametrize(
    ("trigger", "decision"), [("both", "retrain"), ("drift", "retrain"), ("performance", "none")]
)
def test_a_drifted_window_retrains_unless_only_performance_may_trigger(trigger, decision) -> None:
    from mlops.monitoring.judge import judge

    profile, summary = window_of(2.0)
    judged = judge("m", profile, summary, LARGE.model_copy(update={"trigger": trigger}))
    assert (
        judged.drifted_features == ["income", "age", "region"]
        and judged.share_drifted == 1.0
        and judged.dataset_drift
    )
    assert judged.decision == decision and judged.trigger == trigger
    if decision == "retrain":
        assert judged.reasons[0] == "dataset drift: 100% of features drifted (>= 50%): income, age, region"
    else:
        assert judged.reasons[0].startswith(
            "no retraining: drift without a performance drop (dataset drift: 100%"
        )
        assert judged.reasons[0].endswith("(drift.trigger performance)")


@pytest.mark.parametrize(
    ("trigger", "reasons"),
    [("both", ["drop", "dataset drift"]), ("drift", ["dataset drift"]), ("performance", ["drop"])],
)
def test_a_performance_drop_leads_the_reasons_when_it_may_trigger(monkeypatch, trigger, reasons) -> None:
    from mlops.monitoring import judge as judging

    monkeypatch.setattr(judging, "performance_reasons", lambda result, settings: ["drop"])
    profile, summary = window_of(2.0)
    judged = judging.judge("m", profile, summary, LARGE.model_copy(update={"trigger": trigger}))
    assert [r.split(":")[0] for r in judged.reasons] == reasons
    assert judged.performance_drop and judged.decision == "retrain"


def test_groups_named_without_a_gate_report_are_a_finding_not_a_reason() -> None:
    import pandas as pd

    from mlops.monitoring.judge import judge

    profile, summary = window_of(0.0)
    summary.grouped = [pd.DataFrame({"prediction": [0.5], "label": [1], "sex": ["f"]})]
    judged = judge("m", profile, summary, LARGE)
    assert judged.findings == [
        "bias drift not checked: feedback named protected groups, but the version has no model-validation report "
        "to compare with"
    ]
    assert judged.decision == "none" and judged.bias == []


def test_the_prediction_line_names_the_method_that_decided() -> None:
    from mlops.monitoring.drift_reasons import prediction_text

    ks = {"method": "ks", "p_value": 0.0312, "threshold": 0.05, "reference_rows": 78, "window_rows": 300}
    assert prediction_text(ks, 0.2) == "KS p-value 0.0312 (< 0.05; 78 reference, 300 window scores)"
    assert prediction_text({**ks, "p_value": 0.05}, 0.2) == (
        "KS p-value 0.05 (>= 0.05; 78 reference, 300 window scores)"  # at the threshold: no drift
    )
    distance = {"method": "wasserstein", "threshold": 0.1}
    assert prediction_text(distance, 0.1) == "distance 0.1 (>= 0.1)"  # at the threshold: drift
    assert prediction_text(distance, 0.0999) == "distance 0.0999 (< 0.1)"
    assert prediction_text({}, 0.0594) == "distance 0.0594"  # a report from before the method was recorded


def grouped_feedback() -> list:
    """Feedback naming ``sex``: 40 rows of group f selected 90 % of the time, 40 of m selected half the time."""
    import pandas as pd

    rng = np.random.default_rng(5)
    f_scores = np.where(np.arange(40) < 36, 0.9, 0.1)
    m_scores = np.where(np.arange(40) < 20, 0.9, 0.1)
    frame = pd.DataFrame(
        {
            "sex": ["f"] * 40 + ["m"] * 40,
            "prediction": np.concatenate([f_scores, m_scores]),
            "label": rng.integers(0, 2, 80),
        }
    )
    return [frame.iloc[:50], frame.iloc[50:]]  # two days' feedback, concatenated by the check


def test_bias_is_judged_against_the_gate_with_the_settings_and_never_retrains() -> None:
    from mlops.monitoring.bias_drift import GateReference, bias_figures
    from mlops.monitoring.judge import judge

    gate = GateReference({"sex": {"f": 0.5, "m": 0.5}}, {"sex": 0.0}, {"income": 0.1})
    profile, summary = window_of(0.0)
    summary.grouped = grouped_feedback()
    settings = LARGE.model_copy(update={"bias_tolerance": 0.1, "bias_min_group_rows": 40, "confidence": 0.9})
    judged = judge("m", profile, summary, settings, gate)
    figures, breaches = bias_figures(summary.grouped, gate, 0.1, 40, 0.9)
    assert judged.bias == figures and judged.findings == breaches
    assert [f for f in judged.findings if f.startswith("bias drift: sex=f selection rate 0.900")], (
        judged.findings
    )
    assert not [f for f in judged.findings if "sex=m" in f]  # 0.5 as the gate saw it
    assert "(tolerance 0.1)" in judged.findings[0]
    assert judged.decision == "none"  # a finding for people, not a retraining
    # each setting reaches the figures: one more row than a group has turns its breach off
    fewer = judge("m", profile, summary, settings.model_copy(update={"bias_min_group_rows": 41}), gate)
    assert not [f for f in fewer.findings if f.startswith("bias drift: sex=f selection rate")]
    wide = judge("m", profile, summary, settings.model_copy(update={"bias_tolerance": 0.3}), gate)
    assert not [f for f in wide.findings if f.startswith("bias drift: sex=f selection rate")]
    assert wide.bias != judged.bias or wide.findings != judged.findings
    strict = judge("m", profile, summary, settings.model_copy(update={"confidence": 0.99}), gate)
    assert strict.bias != judged.bias  # the bands widen with the confidence


def test_bias_without_a_gate_report_is_a_finding_that_says_why_and_no_feedback_is_no_finding() -> None:
    from mlops.monitoring.bias_drift import GateReference
    from mlops.monitoring.judge import judge

    profile, summary = window_of(0.0)
    assert judge("m", profile, summary, LARGE).findings == []  # no grouped feedback: nothing to say
    gate = GateReference({"sex": {"f": 0.5}}, {"sex": 0.0}, {})
    with_gate = judge("m", profile, summary, LARGE, gate)  # a gate report, but no feedback named groups
    assert (with_gate.bias, with_gate.findings) == ([], [])
    summary.grouped = grouped_feedback()
    judged = judge("m", profile, summary, LARGE)
    assert judged.bias == [] and judged.findings == [
        "bias drift not checked: feedback named protected groups, but the version has no model-validation "
        "report to compare with"
    ]
    assert judged.decision == "none"
