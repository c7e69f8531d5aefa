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
from components.drift_monitor.config import DriftSettings, WindowSettings
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
    decision: str = NO_ACTION
    reasons: list[str] = field(default_factory=list)

    @property
    def drifted_features(self) -> list[str]:
        return [f.name for f in self.features if f.drifted]

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "drifted_features": self.drifted_features}


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


def judge(
    model_name: str, profile: ReferenceProfile, summary: WindowSummary, settings: DriftSettings
) -> DriftResult:
    features = [numeric_drift(c, settings) for c in summary.numeric]
    features += [categorical_drift(c, settings) for c in summary.categorical]
    share = sum(f.drifted for f in features) / len(features)
    prediction = stats.wasserstein_norm(profile.score, summary.score)
    result = DriftResult(
        model_name=model_name,
        version=summary.version,
        start=summary.start.isoformat(),
        end=summary.end.isoformat(),
        rows=summary.rows,
        files=summary.files,
        features=features,
        share_drifted=share,
        dataset_drift=share >= settings.share,
        prediction_score=prediction,
        prediction_drift=prediction >= settings.prediction_threshold,
        estimated=estimate_performance(summary.estimate),
        reference_metrics=dict(profile.metrics),
        realised=realised_performance(summary.labelled),
        other_versions=dict(summary.other_versions),
    )
    drifted = ", ".join(result.drifted_features) or "none"
    if result.dataset_drift:
        result.reasons.append(
            f"dataset drift: {share:.0%} of features drifted (>= {settings.share:.0%}): {drifted}"
        )
    if result.prediction_drift and settings.trigger_on_prediction_drift:
        result.reasons.append(
            f"prediction drift: score distance {prediction:.3f} >= {settings.prediction_threshold}"
            f" (drifted features: {drifted})"
        )
    result.decision = RETRAIN if result.reasons else NO_ACTION
    if not result.reasons:
        result.reasons.append(
            f"no drift: {share:.0%} of features drifted (< {settings.share:.0%}: {drifted}), "
            f"prediction distance {prediction:.3f}"
        )
    return result
