"""The drift check: a window of the request log against the version's reference profile.

Per feature a drift score and verdict (Evidently's tests and thresholds by default),
the share of drifted features, prediction drift, performance estimated from the
scores alone (CBPE) and, when labels arrived through ``mlops feedback``, realised
performance. The verdict ``retrain`` or ``none`` and its reasons go to the caller;
every score goes to the JSON report.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from components.drift_monitor import stats
from components.drift_monitor.bias_drift import GateReference, bias_figures
from components.drift_monitor.config import DriftSettings, WindowSettings
from components.drift_monitor.performance_bands import (
    Band,
    estimated_bands,
    left_below,
    realised_bands,
    reference_bands,
)
from components.drift_monitor.request_window import (
    CategoricalCounts,
    NumericCounts,
    ScoreSummary,
    WindowError,
    WindowSummary,
)
from mlops.model.reference_profile import ReferenceProfile

RETRAIN = "retrain"
NO_ACTION = "none"
DEFAULT_SPAN = timedelta(hours=24)


@dataclass(frozen=True)
class FeatureDrift:
    name: str
    kind: str
    method: str
    score: float
    threshold: float
    drifted: bool
    reference_missing_rate: float
    window_missing_rate: float


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
    prediction_drift: bool
    estimated: dict[str, float]
    """CBPE from calibrated scores: accuracy and ROC AUC without labels."""
    reference_metrics: dict[str, float]
    """The version's test-split metrics, from its profile (the champion's test metrics)."""
    realised: dict[str, float] = field(default_factory=dict)
    """Accuracy and ROC AUC on the window's rows with feedback labels; empty without labels."""
    other_versions: dict[str, int] = field(default_factory=dict)
    trigger: str = "both"
    """What could ask for a retraining (``drift.trigger``)."""
    estimated_bands: dict[str, dict[str, float]] = field(default_factory=dict)
    """The label-free estimate's bands: metric -> value, low, high (window sampling + calibration error)."""
    realised_bands: dict[str, dict[str, float]] = field(default_factory=dict)
    reference_bands: dict[str, dict[str, float]] = field(default_factory=dict)
    """The champion's test metrics with their bands."""
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


def _method(name: str, default: str, settings: DriftSettings) -> str:
    return settings.feature_methods.get(name, default)


def numeric_drift(counts: NumericCounts, settings: DriftSettings) -> FeatureDrift:
    ref = counts.profile
    few_values = ref.discrete and len(ref.edges) <= 5  # Evidently: <= 5 distinct values -> Jensen-Shannon
    method = _method(ref.name, "jensenshannon" if few_values else settings.numeric_method, settings)
    reference = np.asarray(ref.counts, dtype=float)
    current = counts.counts.astype(float)
    if method == "wasserstein":
        score = stats.wasserstein_norm(ref, counts)
    elif method == "jensenshannon":
        score = stats.jensenshannon(reference, current)
    else:
        score = stats.psi(*(stats.deciles(reference, current) if not ref.discrete else (reference, current)))
    return _verdict(
        ref.name, "numeric", method, score, settings, ref.missing, ref.rows, counts.missing, counts.rows
    )


def categorical_drift(counts: CategoricalCounts, settings: DriftSettings) -> FeatureDrift:
    ref = counts.profile
    method = _method(ref.name, settings.categorical_method, settings)
    if method == "wasserstein":
        raise WindowError(
            f"feature {ref.name!r} is categorical; wasserstein needs numbers: use jensenshannon or psi"
        )
    reference, current = stats.categorical_vectors(ref.categories, ref.counts, counts.counts)
    score = (
        stats.jensenshannon(reference, current)
        if method == "jensenshannon"
        else stats.psi(reference, current)
    )
    return _verdict(
        ref.name, "categorical", method, score, settings, ref.missing, ref.rows, counts.missing, counts.rows
    )


def _verdict(
    name: str,
    kind: str,
    method: str,
    score: float,
    settings: DriftSettings,
    ref_missing: int,
    ref_rows: int,
    missing: int,
    rows: int,
) -> FeatureDrift:
    threshold = settings.feature_thresholds.get(name, settings.threshold(method))
    return FeatureDrift(
        name=name,
        kind=kind,
        method=method,
        score=float(score),
        threshold=threshold,
        drifted=bool(score >= threshold),  # NaN (a column with no values in the window) is no drift
        reference_missing_rate=ref_missing / max(ref_missing + ref_rows, 1),
        window_missing_rate=missing / max(missing + rows, 1),
    )


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
    prediction = stats.wasserstein_norm(profile.score, summary.score)
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
        prediction_score=prediction,
        prediction_drift=prediction >= settings.prediction_threshold,
        estimated=estimated,
        reference_metrics=dict(profile.metrics),
        realised=realised_performance(summary.labelled),
        other_versions=dict(summary.other_versions),
        trigger=settings.trigger,
        rows_from_summaries=summary.summarised_rows,
        summary_days=list(summary.summarised_days),
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
        reasons.append(
            f"prediction drift: score distance {result.prediction_score:.3f} >= {settings.prediction_threshold}"
            f" (drifted features: {drifted})"
        )
    return reasons


def _text(band: dict[str, float]) -> str:
    return f"{band['value']:.3f} [{band['low']:.3f}, {band['high']:.3f}]"


def _performance_reasons(result: DriftResult, settings: DriftSettings) -> list[str]:
    """A drop of ``performance_metric`` whose band leaves the champion's test band: estimated, then realised."""
    metric = settings.performance_metric
    reference = result.reference_bands.get(metric)
    if reference is None:
        return []
    champion = Band(**reference)
    level = f"{settings.confidence:.0%}"
    explanation = (
        f"drifted features: {_drifted_text(result)}"
        if result.drifted_features
        else "no feature drifted past its threshold: the shift moves rows where the model is less certain"
    )
    reasons = []
    estimate = result.estimated_bands.get(metric)
    if estimate is not None and left_below(Band(**estimate), champion):
        reasons.append(
            f"estimated {metric} drop {champion.value - estimate['value']:.3f}: label-free estimate "
            f"{_text(estimate)} below the champion's test {_text(reference)} ({level} bands); {explanation}"
        )
    labelled = int(result.realised.get("labelled_rows", 0))
    realised = result.realised_bands.get(metric)
    if (
        realised is not None
        and labelled >= settings.min_labelled_rows
        and left_below(Band(**realised), champion)
    ):
        unseen = (
            ""
            if reasons
            else "; the label-free estimate "
            + (_text(estimate) if estimate else "(none)")
            + " cannot see this drop: the scores did not move, the relation between features and label did"
        )
        reasons.append(
            f"realised {metric} drop {champion.value - realised['value']:.3f} on {labelled} labelled rows: "
            f"{_text(realised)} below the champion's test {_text(reference)} ({level} bands){unseen}; {explanation}"
        )
    return reasons


def _no_action(result: DriftResult, settings: DriftSettings, drift_reasons: list[str]) -> str:
    metric = settings.performance_metric
    estimate = result.estimated_bands.get(metric)
    performance = f"estimated {metric} {_text(estimate)}" if estimate else f"no {metric} estimate"
    reference = result.reference_bands.get(metric)
    versus = f" vs the champion's test {_text(reference)}" if reference else ""
    if drift_reasons:  # drift the trigger does not act on (drift.trigger performance)
        return (
            f"no retraining: drift without a performance drop ({'; '.join(drift_reasons)}), {performance}{versus}"
            f" (drift.trigger {settings.trigger})"
        )
    return (
        f"no drift: {result.share_drifted:.0%} of features drifted (< {settings.share:.0%}: "
        f"{_drifted_text(result)}), prediction distance {result.prediction_score:.3f}; {performance}{versus}"
    )
