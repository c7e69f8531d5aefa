"""The drift check: a window of the request log against the version's reference profile.

Per feature a drift score and verdict (Evidently's tests and thresholds by default: a
statistical test for small samples, a distance for large ones, :func:`choose_method`),
the share of drifted features, prediction drift, performance estimated from the
scores alone (CBPE) and, when labels arrived through ``mlops feedback``, realised
performance. The verdict ``retrain`` or ``none`` and its reasons go to the caller;
every score goes to the JSON report.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from mlops.model.reference_profile import ReferenceProfile
from mlops.monitoring import stats
from mlops.monitoring.bias_drift import GateReference, bias_figures
from mlops.monitoring.drift_settings import TESTS, DriftSettings, WindowSettings
from mlops.monitoring.performance_bands import (
    Band,
    estimated_bands,
    left_below,
    realised_bands,
    reference_bands,
)
from mlops.monitoring.request_window import (
    CategoricalCounts,
    NumericCounts,
    ScoreSummary,
    WindowError,
    WindowSummary,
)

RETRAIN = "retrain"
NO_ACTION = "none"
DEFAULT_SPAN = timedelta(hours=24)


@dataclass(frozen=True)
class FeatureDrift:
    name: str
    kind: str
    method: str
    """The test or distance the verdict comes from: wasserstein, jensenshannon, psi (distances), ks, chisquare."""
    score: float
    """The figure judged against ``threshold``: the distance, or the test's p-value."""
    threshold: float
    """A distance drifts at or above it; a test's p-value drifts below it."""
    drifted: bool
    reference_missing_rate: float
    window_missing_rate: float
    statistic: float = float("nan")
    """The test's statistic (KS D, chi²) or the distance itself."""
    p_value: float | None = None
    """The test's p-value (the score); None for a distance."""
    reference_rows: int = 0
    """Non-missing reference values of the feature (the sample size the method was chosen by)."""
    window_rows: int = 0
    """Non-missing window values of the feature."""
    rule: str = ""
    """Why this method and threshold, in words: the setting that chose it and the drift rule."""


@dataclass
class DriftResult:
    model_name: str
    version: str
    start: str
    end: str
    rows: int
    files: int
    features: list[FeatureDrift]
    share_drifted: float
    dataset_drift: bool
    prediction_score: float
    """The scores' normalised Wasserstein distance (reported at every size; judged when the sample is large)."""
    prediction_drift: bool
    estimated: dict[str, float]
    """CBPE from calibrated scores: accuracy and ROC AUC without labels."""
    reference_metrics: dict[str, float]
    """The checked version's test-split metrics, from its profile (the champion's only when it is the champion)."""
    realised: dict[str, float] = field(default_factory=dict)
    """Accuracy and ROC AUC on the window's rows with feedback labels; empty without labels."""
    other_versions: dict[str, int] = field(default_factory=dict)
    trigger: str = "both"
    """What could ask for a retraining (``drift.trigger``)."""
    estimated_bands: dict[str, dict[str, float]] = field(default_factory=dict)
    """The label-free estimate's bands: metric -> value, low, high (window sampling + calibration error)."""
    realised_bands: dict[str, dict[str, float]] = field(default_factory=dict)
    reference_bands: dict[str, dict[str, float]] = field(default_factory=dict)
    """The checked version's test metrics with their bands."""
    performance_drop: bool = False
    bias: list[dict[str, Any]] = field(default_factory=list)
    """Per protected attribute and group, the window's figures against the gate's (feedback named the groups)."""
    attribution: dict[str, Any] = field(default_factory=dict)
    """Attribution drift: rank agreement, whether the ranking changed, the features that moved most, and the
    window's and the gate's importances; or ``not_checked`` with the reason (empty: switched off)."""
    findings: list[str] = field(default_factory=list)
    """Monitoring findings that do not ask for a retraining: bias and attribution drift, or why they were not checked."""
    rows_from_summaries: int = 0
    """Rows of the window counted from stored daily summaries, not read again from the request log."""
    summary_days: list[str] = field(default_factory=list)
    """Days (YYYY-MM-DD) served from stored summaries."""
    prediction: dict[str, Any] = field(default_factory=dict)
    """How the scores were judged: method (wasserstein or ks), statistic, p_value, threshold, rule, sizes."""
    decision: str = NO_ACTION
    reasons: list[str] = field(default_factory=list)

    @property
    def drifted_features(self) -> list[str]:
        return [f.name for f in self.features if f.drifted]

    @property
    def headline(self) -> str:
        """The report's first line: the decision's leading reason (a performance drop leads when there is one)."""
        return f"{self.decision}: {self.reasons[0]}" if self.reasons else self.decision

    def as_dict(self) -> dict[str, Any]:
        return {"headline": self.headline, **asdict(self), "drifted_features": self.drifted_features}


def parse_instant(text: str, name: str) -> datetime:
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError as exc:
        raise WindowError(f"{name} {text!r} is not an ISO 8601 time; use e.g. 2026-11-23T15:00:00Z") from exc
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def window_bounds(settings: WindowSettings, now: datetime | None = None) -> tuple[datetime, datetime]:
    end = parse_instant(settings.until, "until") if settings.until else (now or datetime.now(UTC))
    start = parse_instant(settings.since, "since") if settings.since else end - DEFAULT_SPAN
    if start >= end:
        raise WindowError(
            f"since {start.isoformat()} is not before until {end.isoformat()}; the window is empty"
        )
    return start, end


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
    return _verdict(
        ref.name,
        "numeric",
        method,
        (score, statistic, p_value),
        (auto, source),
        settings,
        (ref.missing, ref.rows, counts.missing, counts.rows),
    )


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
    return _verdict(
        ref.name,
        "categorical",
        method,
        (score, statistic, p_value),
        (auto, source),
        settings,
        (ref.missing, ref.rows, counts.missing, counts.rows),
    )


def drifted_by(method: str, score: float, threshold: float) -> bool:
    """A test's p-value below its threshold (at it: no drift, as Evidently), a distance at or above it.

    NaN (a column with no values in the window) is no drift either way.
    """
    return bool(score < threshold) if method in TESTS else bool(score >= threshold)


def prediction_text(prediction: Mapping[str, Any], distance: float) -> str:
    """The scores' judgement in words, by the method that decided it: the KS test's p-value on small samples
    (the distance would read as drift there, being mostly sampling noise), else the distance."""
    if prediction.get("method") == "ks":
        p_value, threshold = float(prediction["p_value"]), float(prediction["threshold"])
        versus = "<" if drifted_by("ks", p_value, threshold) else ">="
        return (
            f"KS p-value {p_value:.3g} ({versus} {threshold:g}; {prediction['reference_rows']} reference, "
            f"{prediction['window_rows']} window scores)"
        )
    if prediction.get("threshold") is None:  # a report written before the method was recorded
        return f"distance {distance:.3g}"
    limit = float(prediction["threshold"])
    versus = ">=" if drifted_by("wasserstein", distance, limit) else "<"
    return f"distance {distance:.3g} ({versus} {limit:g})"


def rule_text(method: str, threshold: float, source: str) -> str:
    """The drift rule and what chose the method, e.g. ``ks p-value < 0.05 (auto: …)``."""
    judged = f"p-value < {threshold:g}" if method in TESTS else f"distance >= {threshold:g}"
    return f"{method} {judged} ({source})"


def _verdict(
    name: str,
    kind: str,
    method: str,
    figures: tuple[float, float, float | None],
    chosen: tuple[bool, str],
    settings: DriftSettings,
    sizes: tuple[int, int, int, int],
) -> FeatureDrift:
    score, statistic, p_value = figures
    auto, source = chosen
    ref_missing, ref_rows, missing, rows = sizes
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


def estimate_performance(summary: ScoreSummary) -> dict[str, float]:
    """Confidence-based performance estimation: expected accuracy and ROC AUC if the scores are calibrated.

    Each row counts as ``p`` of a positive and ``1 - p`` of a negative at its score (p the
    calibrated probability); ROC AUC is the chance an expected positive outranks an expected
    negative, ties within a score bin counting half.
    """
    pos, neg = summary.positives, summary.negatives
    total_pos, total_neg = pos.sum(), neg.sum()
    if summary.rows == 0 or total_pos == 0 or total_neg == 0:
        return {}
    below = np.concatenate([[0.0], np.cumsum(neg)[:-1]])
    auc = float(np.sum(pos * (below + neg / 2)) / (total_pos * total_neg))
    return {
        "accuracy": summary.correct / summary.rows,
        "roc_auc": auc,
        "positive_rate": float(total_pos / summary.rows),
    }


def realised_performance(labelled: list[tuple[np.ndarray, np.ndarray]]) -> dict[str, float]:
    if not labelled:
        return {}
    from sklearn.metrics import roc_auc_score

    scores = np.concatenate([s for s, _ in labelled])
    labels = np.concatenate([y for _, y in labelled])
    out = {"accuracy": float(((scores >= 0.5) == labels).mean()), "labelled_rows": float(len(labels))}
    if len(np.unique(labels)) == 2:
        out["roc_auc"] = float(roc_auc_score(labels, scores))
    return out


def dataset_drifted(drifted: int, features: int, share: float) -> bool:
    """Dataset drift: at least ``share`` of the features drifted, compared on counts.

    ``drifted >= share * features`` with a tolerance of 1e-9 features: 10 of 20 at share 0.5 is
    drift whatever rounding the product takes (a tie is common with 20 features).
    """
    return drifted >= share * features - 1e-9


def judge(
    model_name: str,
    profile: ReferenceProfile,
    summary: WindowSummary,
    settings: DriftSettings,
    gate: GateReference | None = None,
) -> DriftResult:
    features = [numeric_drift(c, settings) for c in summary.numeric]
    features += [categorical_drift(c, settings) for c in summary.categorical]
    count = sum(f.drifted for f in features)
    share = count / len(features)
    prediction = judge_prediction(profile, summary, settings)
    estimated = estimate_performance(summary.estimate)
    labelled_scores, labels = labelled_rows(summary.labelled)
    result = DriftResult(
        model_name=model_name,
        version=summary.version,
        start=summary.start.isoformat(),
        end=summary.end.isoformat(),
        rows=summary.rows,
        files=summary.files,
        features=features,
        share_drifted=share,
        dataset_drift=dataset_drifted(count, len(features), settings.share),
        prediction_score=prediction["score"],
        prediction_drift=prediction["drifted"],
        estimated=estimated,
        reference_metrics=dict(profile.metrics),
        realised=realised_performance(summary.labelled),
        other_versions=dict(summary.other_versions),
        trigger=settings.trigger,
        rows_from_summaries=summary.summarised_rows,
        summary_days=list(summary.summarised_days),
        prediction=prediction,
    )
    result.estimated_bands = as_dicts(
        estimated_bands(
            summary.estimate,
            estimated,
            profile.calibration,
            profile.score,
            settings.confidence,
            settings.bootstrap_samples,
        )
    )
    result.realised_bands = as_dicts(
        realised_bands(labelled_scores, labels, settings.confidence, settings.bootstrap_samples)
    )
    result.reference_bands = as_dicts(reference_bands(profile.metrics, profile.rows, settings.confidence))
    if summary.grouped and gate is None:
        result.findings.append(
            "bias drift not checked: feedback named protected groups, but the version has no model-validation "
            "report to compare with"
        )
    elif summary.grouped and gate is not None:
        result.bias, breaches = bias_figures(
            summary.grouped, gate, settings.bias_tolerance, settings.bias_min_group_rows, settings.confidence
        )
        result.findings.extend(breaches)
    drift_reasons = _drift_reasons(result, settings)
    performance_reasons = _performance_reasons(result, settings)
    result.performance_drop = bool(performance_reasons)
    if settings.trigger == "drift":
        result.reasons = drift_reasons
    elif settings.trigger == "performance":
        result.reasons = performance_reasons
    else:
        result.reasons = performance_reasons + drift_reasons  # the drop leads; drift explains it
    result.decision = RETRAIN if result.reasons else NO_ACTION
    if not result.reasons:
        result.reasons.append(_no_action(result, settings, drift_reasons))
    return result


def labelled_rows(labelled: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    if not labelled:
        return np.zeros(0), np.zeros(0, dtype=int)
    return np.concatenate([s for s, _ in labelled]), np.concatenate([y for _, y in labelled])


def as_dicts(bands: dict[str, Band]) -> dict[str, dict[str, float]]:
    return {name: band.as_dict() for name, band in bands.items()}


def _drifted_text(result: DriftResult) -> str:
    return ", ".join(result.drifted_features) or "none"


def _drift_reasons(result: DriftResult, settings: DriftSettings) -> list[str]:
    reasons = []
    drifted = _drifted_text(result)
    if result.dataset_drift:
        reasons.append(
            f"dataset drift: {result.share_drifted:.0%} of features drifted (>= {settings.share:.0%}): {drifted}"
        )
    if result.prediction_drift and settings.trigger_on_prediction_drift:
        judged = (
            f"scores' KS p-value {result.prediction['p_value']:.3g} < {result.prediction['threshold']:g}"
            f" ({result.prediction['reference_rows']} reference, {result.prediction['window_rows']} window scores)"
            if result.prediction.get("method") == "ks"
            else f"score distance {result.prediction_score:.3f} >= {settings.prediction_threshold}"
        )
        reasons.append(f"prediction drift: {judged} (drifted features: {drifted})")
    return reasons


def _text(band: dict[str, float]) -> str:
    return f"{band['value']:.3f} [{band['low']:.3f}, {band['high']:.3f}]"


def reference_name(version: str) -> str:
    """What a window's figures are compared with: the checked version's own test metrics (its profile's),
    named by version, since the version checked need not be the champion (``window.model_version``)."""
    return f"version {version}'s test"


def _performance_reasons(result: DriftResult, settings: DriftSettings) -> list[str]:
    """A drop of ``performance_metric`` whose band leaves the version's test band: estimated, then realised."""
    metric = settings.performance_metric
    reference = result.reference_bands.get(metric)
    if reference is None:
        return []
    tested = Band(**reference)
    level = f"{settings.confidence:.0%}"
    explanation = (
        f"drifted features: {_drifted_text(result)}"
        if result.drifted_features
        else "no feature drifted past its threshold: the shift moves rows where the model is less certain"
    )
    reasons = []
    estimate = result.estimated_bands.get(metric)
    if estimate is not None and left_below(Band(**estimate), tested):
        reasons.append(
            f"estimated {metric} drop {tested.value - estimate['value']:.3f}: label-free estimate "
            f"{_text(estimate)} below {reference_name(result.version)} {_text(reference)} ({level} bands); "
            f"{explanation}"
        )
    labelled = int(result.realised.get("labelled_rows", 0))
    realised = result.realised_bands.get(metric)
    if (
        realised is not None
        and labelled >= settings.min_labelled_rows
        and left_below(Band(**realised), tested)
    ):
        unseen = (
            ""
            if reasons
            else "; the label-free estimate "
            + (_text(estimate) if estimate else "(none)")
            + " cannot see this drop: the scores did not move, the relation between features and label did"
        )
        reasons.append(
            f"realised {metric} drop {tested.value - realised['value']:.3f} on {labelled} labelled rows: "
            f"{_text(realised)} below {reference_name(result.version)} {_text(reference)} ({level} bands)"
            f"{unseen}; {explanation}"
        )
    return reasons


def _no_action(result: DriftResult, settings: DriftSettings, drift_reasons: list[str]) -> str:
    metric = settings.performance_metric
    estimate = result.estimated_bands.get(metric)
    performance = f"estimated {metric} {_text(estimate)}" if estimate else f"no {metric} estimate"
    reference = result.reference_bands.get(metric)
    versus = f" vs {reference_name(result.version)} {_text(reference)}" if reference else ""
    if drift_reasons:  # drift the trigger does not act on (drift.trigger performance)
        return (
            f"no retraining: drift without a performance drop ({'; '.join(drift_reasons)}), {performance}{versus}"
            f" (drift.trigger {settings.trigger})"
        )
    return (
        f"no drift: {result.share_drifted:.0%} of features drifted (< {settings.share:.0%}: "
        f"{_drifted_text(result)}), prediction {prediction_text(result.prediction, result.prediction_score)}; "
        f"{performance}{versus}"
    )
