"""The drift check's decision: a window of the request log against the version's reference profile.

Per feature a drift score and verdict (:mod:`mlops.monitoring.feature_drift`), the share of
drifted features, prediction drift, performance estimated from the scores alone (CBPE) and,
when labels arrived through ``mlops feedback``, realised performance
(:mod:`mlops.monitoring.performance_estimate`), each with its band. The verdict ``retrain`` or
``none`` and its reasons (:mod:`mlops.monitoring.drift_reasons`) go to the caller; every score
goes to the JSON report (:class:`~mlops.monitoring.drift_result.DriftResult`).
"""

from __future__ import annotations

from mlops.model.reference_profile import ReferenceProfile
from mlops.monitoring.bias_drift import GateReference, bias_figures
from mlops.monitoring.drift_reasons import drift_reasons, no_action_reason, performance_reasons
from mlops.monitoring.drift_result import NO_ACTION, RETRAIN, DriftResult
from mlops.monitoring.drift_settings import DriftSettings
from mlops.monitoring.feature_drift import categorical_drift, judge_prediction, numeric_drift
from mlops.monitoring.performance_bands import Band, estimated_bands, realised_bands, reference_bands
from mlops.monitoring.performance_estimate import estimate_performance, labelled_rows, realised_performance
from mlops.monitoring.request_window import WindowSummary


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
    drift_found = drift_reasons(result, settings)
    performance_found = performance_reasons(result, settings)
    result.performance_drop = bool(performance_found)
    if settings.trigger == "drift":
        result.reasons = drift_found
    elif settings.trigger == "performance":
        result.reasons = performance_found
    else:
        result.reasons = performance_found + drift_found  # the drop leads; drift explains it
    result.decision = RETRAIN if result.reasons else NO_ACTION
    if not result.reasons:
        result.reasons.append(no_action_reason(result, settings, drift_found))
    return result


def as_dicts(bands: dict[str, Band]) -> dict[str, dict[str, float]]:
    return {name: band.as_dict() for name, band in bands.items()}
