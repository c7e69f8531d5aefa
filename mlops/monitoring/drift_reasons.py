"""The decision's reasons in words: which drift or performance drop asks for a retraining, or why none
does. Each reason names the figures, their thresholds or bands and the setting behind them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mlops.monitoring.drift_result import DriftResult
from mlops.monitoring.drift_settings import DriftSettings
from mlops.monitoring.feature_drift import drifted_by
from mlops.monitoring.performance_bands import Band, left_below


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


def _drifted_text(result: DriftResult) -> str:
    return ", ".join(result.drifted_features) or "none"


def drift_reasons(result: DriftResult, settings: DriftSettings) -> list[str]:
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


def performance_reasons(result: DriftResult, settings: DriftSettings) -> list[str]:
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


def no_action_reason(result: DriftResult, settings: DriftSettings, drift_reasons: list[str]) -> str:
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
