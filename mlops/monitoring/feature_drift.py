"""Per feature, drift score and verdict (Evidently's tests and thresholds by default: a statistical test
for small samples, a distance for large ones, :func:`choose_method`), and the same judgement of the
scores (prediction drift). The statistics themselves are :mod:`mlops.monitoring.stats`."""

from __future__ import annotations

from typing import Any

import numpy as np

from mlops.model.reference_profile import ReferenceProfile
from mlops.monitoring import stats
from mlops.monitoring.drift_result import FeatureDrift
from mlops.monitoring.drift_settings import TESTS, DriftSettings
from mlops.monitoring.request_window import CategoricalCounts, NumericCounts, WindowError, WindowSummary


def small_sample(reference_rows: int, window_rows: int, settings: DriftSettings) -> bool:
    """A sample too small for a distance: the reference or the window holds at most ``small_sample_rows`` values.

    Evidently's rule looks at the reference alone (at most 1000 rows: tests); the window counts
    too here, since a distance's sampling noise grows as ``sqrt(1/n_ref + 1/n_window)``: a 100-row
    window against a 5000-row reference puts the normalised Wasserstein of undrifted normal data
    at or above 0.1 about three times in four.
    """
    return min(reference_rows, window_rows) <= settings.small_sample_rows


def choose_method(
    name: str, categorical: bool, reference_rows: int, window_rows: int, settings: DriftSettings, default: str
) -> tuple[str, bool, str]:
    """The feature's method, whether ``auto`` chose it, and the setting that did, in words.

    ``default`` names the setting that applies without a per-feature method (``numeric_method`` or
    ``categorical_method``); a per-feature or named method is used at every sample size.

    ``categorical`` covers numeric features with at most 5 distinct reference values, judged as
    categories. ``auto`` follows Evidently's choice by sample size (:func:`small_sample`): the
    two-sample KS test for numbers and the chi-squared test for categories when small, the
    normalised Wasserstein and Jensen-Shannon distances when large. Tests judge whether the
    two samples could come from one distribution, so their false alarms stay at the p-value
    whatever the size; a fixed distance threshold is only safe once the samples are large
    enough for the distance's own noise to sit well below it. The reference profile keeps
    per-bin counts (every distinct value of a small reference), which is all both tests need.
    """
    explicit = settings.feature_methods.get(name, "auto")
    source = f"drift.feature_methods[{name!r}]" if explicit != "auto" else f"drift.{default}"
    method = explicit if explicit != "auto" else getattr(settings, default)
    if method != "auto":
        if categorical and source == "drift.numeric_method":  # few distinct values: judged as categories
            method = "chisquare" if method == "ks" else "jensenshannon"
            source += " (at most 5 distinct values: as categories)"
        return method, False, source
    small = small_sample(reference_rows, window_rows, settings)
    if small:
        method = "chisquare" if categorical else "ks"
    else:
        method = "jensenshannon" if categorical else "wasserstein"
    sizes = f"{reference_rows} reference and {window_rows} window values"
    bound = settings.small_sample_rows
    why = f"{sizes}, {'the fewer at most' if small else 'both above'} drift.small_sample_rows {bound}"
    return method, True, f"auto: {why}"


def numeric_drift(counts: NumericCounts, settings: DriftSettings) -> FeatureDrift:
    ref = counts.profile
    few_values = ref.discrete and len(ref.edges) <= 5  # Evidently: <= 5 distinct values -> as categories
    method, auto, source = choose_method(
        ref.name, few_values, ref.rows, counts.rows, settings, "numeric_method"
    )
    reference = np.asarray(ref.counts, dtype=float)
    current = counts.counts.astype(float)
    p_value = None
    if method == "wasserstein":
        score = statistic = stats.wasserstein_norm(ref, counts)
    elif method == "jensenshannon":
        score = statistic = stats.jensenshannon(reference, current)
    elif method == "psi":
        score = statistic = stats.psi(
            *(stats.deciles(reference, current) if not ref.discrete else (reference, current))
        )
    else:
        test = stats.ks_binned if method == "ks" else stats.chi_square
        statistic, score = test(np.asarray(ref.counts), counts.counts)
        p_value = score
    return _verdict(counts, "numeric", method, (score, statistic, p_value), (auto, source), settings)


def categorical_drift(counts: CategoricalCounts, settings: DriftSettings) -> FeatureDrift:
    ref = counts.profile
    method, auto, source = choose_method(
        ref.name, True, ref.rows, counts.rows, settings, "categorical_method"
    )
    if method in ("wasserstein", "ks"):
        raise WindowError(
            f"feature {ref.name!r} is categorical; {method} needs numbers: use chisquare, jensenshannon or psi"
        )
    reference, current = stats.categorical_vectors(ref.categories, ref.counts, counts.counts)
    p_value = None
    if method == "chisquare":
        statistic, score = stats.chi_square(reference, current)
        p_value = score
    elif method == "jensenshannon":
        score = statistic = stats.jensenshannon(reference, current)
    else:
        score = statistic = stats.psi(reference, current)
    return _verdict(counts, "categorical", method, (score, statistic, p_value), (auto, source), settings)


def drifted_by(method: str, score: float, threshold: float) -> bool:
    """A test's p-value below its threshold (at it: no drift, as Evidently), a distance at or above it.

    NaN (a column with no values in the window) is no drift either way.
    """
    return bool(score < threshold) if method in TESTS else bool(score >= threshold)


def rule_text(method: str, threshold: float, source: str) -> str:
    """The drift rule and what chose the method, e.g. ``ks p-value < 0.05 (auto: …)``."""
    judged = f"p-value < {threshold:g}" if method in TESTS else f"distance >= {threshold:g}"
    return f"{method} {judged} ({source})"


def _verdict(
    counts: NumericCounts | CategoricalCounts,
    kind: str,
    method: str,
    figures: tuple[float, float, float | None],
    chosen: tuple[bool, str],
    settings: DriftSettings,
) -> FeatureDrift:
    """One feature's verdict, numeric or categorical alike: its threshold, the drift rule, and the
    missing rates and sample sizes of the reference and the window."""
    score, statistic, p_value = figures
    auto, source = chosen
    name = counts.profile.name
    ref_missing, ref_rows, missing, rows = (
        counts.profile.missing,
        counts.profile.rows,
        counts.missing,
        counts.rows,
    )
    if auto and method in TESTS:  # a per-feature threshold was set for the distance of large samples
        threshold = settings.p_value
    else:
        threshold = settings.feature_thresholds.get(name, settings.threshold(method))
    if method in TESTS and threshold >= 1:
        raise WindowError(
            f"feature {name!r} is judged by {method}, whose threshold is a p-value, but "
            f"drift.feature_thresholds gives it {threshold}: set a p-value below 1 or name a distance"
        )
    return FeatureDrift(
        name=name,
        kind=kind,
        method=method,
        score=float(score),
        threshold=threshold,
        drifted=drifted_by(method, score, threshold),
        reference_missing_rate=ref_missing / max(ref_missing + ref_rows, 1),
        window_missing_rate=missing / max(missing + rows, 1),
        statistic=float(statistic),
        p_value=None if p_value is None else float(p_value),
        reference_rows=ref_rows,
        window_rows=rows,
        rule=rule_text(method, threshold, source),
    )


def judge_prediction(
    profile: ReferenceProfile, summary: WindowSummary, settings: DriftSettings
) -> dict[str, Any]:
    """The scores' judgement: the normalised Wasserstein distance (always reported as ``score``), judged
    against ``prediction_threshold``, or, with ``numeric_method`` auto and a small sample of scores, the KS
    test against ``p_value``."""
    distance = stats.wasserstein_norm(profile.score, summary.score)
    ref_rows, rows = profile.score.rows, summary.score.rows
    if settings.numeric_method == "auto" and small_sample(ref_rows, rows, settings):
        statistic, p_value = stats.ks_binned(np.asarray(profile.score.counts), summary.score.counts)
        method, threshold, judged = "ks", settings.p_value, p_value
        source = (
            f"auto: {ref_rows} reference and {rows} window scores, the fewer at most drift.small_sample_rows "
            f"{settings.small_sample_rows}"
        )
    else:
        statistic, p_value = distance, None
        method, threshold, judged = "wasserstein", settings.prediction_threshold, distance
        source = "drift.prediction_threshold"
    return {
        "method": method,
        "score": distance,
        "statistic": statistic,
        "p_value": p_value,
        "threshold": threshold,
        "drifted": drifted_by(method, judged, threshold),
        "reference_rows": ref_rows,
        "window_rows": rows,
        "rule": rule_text(method, threshold, source),
    }
