"""One drift check end to end: resolve the version, load its profile, stream the window, judge, log.

Errors (no champion, no profile, an empty window, a log of another schema) raise
:class:`WindowError` / :class:`mlops.model.reference_profile.ProfileError` before anything is logged or
triggered.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from components.drift_monitor.config import DriftSettings, WindowSettings
from mlops.model.reference_profile import ReferenceProfile
from mlops.monitoring.day_summaries import sample_stored_days, summarise_window
from mlops.monitoring.drift_reasons import prediction_text, reference_name
from mlops.monitoring.drift_result import DriftResult
from mlops.monitoring.judge import judge
from mlops.monitoring.request_window import Calibrator, WindowError, empty_summary
from mlops.monitoring.sample import Reservoir
from mlops.monitoring.window_span import window_bounds
from mlops.tracking.store import TrackingStore
from mlops.vocabulary import CHAMPION, VALIDATION_REPORT_FILE, VALIDATION_RUN_TAG

if TYPE_CHECKING:
    import pandas as pd

    from mlops.governance.alerts import AlertSettings
    from mlops.monitoring.bias_drift import GateReference

JSON_REPORT = "drift_report.json"
HTML_REPORT = "drift_report.html"


@dataclass
class Check:
    result: DriftResult
    profile: ReferenceProfile
    sample: Reservoir
    """A uniform sample of the window's rows: the HTML report's and the attribution's."""
    report_rows: int
    """Rows of ``sample`` the HTML report shows (0: no HTML report)."""


def resolve_version(store: TrackingStore, model_name: str, version: str) -> str:
    if version:
        return version
    champion = store.alias_version(model_name, CHAMPION)
    if champion is None:
        raise WindowError(
            f"model {model_name!r} has no {CHAMPION!r} version to monitor; name one with model_version"
        )
    return champion


def check_window(
    window: WindowSettings,
    drift: DriftSettings,
    store: TrackingStore,
    log_root: str,
    now: datetime | None = None,
) -> Check:
    start, end = window_bounds(window, now)
    version = resolve_version(store, window.model_name, window.model_version)
    profile = store.reference_profile(window.model_name, version)
    calibrate = Calibrator(profile.calibration)
    summary = empty_summary(profile, start, end, version)
    sample = Reservoir(max(window.report_rows, drift.attribution_rows))
    columns = [*profile.feature_names, "prediction"]

    summarise_window(
        log_root,
        window.model_name,
        summary,
        profile,
        calibrate,
        now or datetime.now(UTC),
        on_table=lambda t: sample.add(t, columns),
    )
    sampled = 0 if sample.frame is None else len(sample.frame)
    # The stored days give counts; the report's picture and the attribution need rows.
    if sampled < sample.size:
        sample_stored_days(
            log_root,
            window.model_name,
            summary,
            profile,
            sample.size - sampled,
            lambda t: sample.add(t, columns),
        )
    if summary.rows < window.min_rows:
        others = f"; rows of other versions: {summary.other_versions}" if summary.other_versions else ""
        raise WindowError(
            f"the window {start.isoformat()} .. {end.isoformat()} holds {summary.rows} logged row(s) of "
            f"{window.model_name} v{version} under {log_root} (min_rows {window.min_rows}){others}; widen "
            "--since/--until, check the request log location, or lower min_rows. Nothing was triggered"
        )
    gate = (
        gate_reference(store, window.model_name, version)
        if summary.grouped or drift.attribution_rows
        else None
    )
    result = judge(window.model_name, profile, summary, drift, gate if summary.grouped else None)
    if drift.attribution_rows and sample.frame is not None:
        check_attribution(result, store, gate, sample.frame.head(drift.attribution_rows), drift)
    return Check(result, profile, sample, window.report_rows)


def check_attribution(
    result: DriftResult,
    store: TrackingStore,
    gate: GateReference | None,
    rows: pd.DataFrame,
    drift: DriftSettings,
) -> None:
    """Attribution drift of the served version on the window's ``rows``, against the gate's ranking: a finding
    when the ranking changed; ``result.attribution["not_checked"]`` says why it could not be measured (a
    version never judged by the gate, a model that cannot be read): that never fails the check."""
    import tempfile

    import numpy as np

    from mlops.model.onnx_model import OnnxModelError, OnnxScorer, onnx_file
    from mlops.monitoring.bias_drift import attribution_drift, shuffle_importance

    if gate is None or len(gate.importance) < 3:
        result.attribution = {
            "not_checked": "the version has no model-validation report with feature importances to compare with"
        }
        return
    try:
        with tempfile.TemporaryDirectory(prefix="mlops-attribution-") as folder:
            local = store.download_version(result.model_name, result.version, folder)
            store.verify_version(result.model_name, result.version, local)  # nothing unverified is loaded
            preferred = onnx_file(local)
            if preferred is None:
                raise OnnxModelError(f"version {result.version} holds no .onnx file")
            scorer = OnnxScorer.load(preferred)
            x = scorer.spec.encode(rows)
            names = list(scorer.spec.names)

            def score(columns: dict[str, np.ndarray]) -> np.ndarray:
                return scorer.predict_encoded(np.column_stack([columns[n] for n in names]).astype(np.float32))

            window = shuffle_importance(score, {n: x[:, j] for j, n in enumerate(names)})
        measured = attribution_drift(window, gate.importance, drift.attribution_min_agreement)
    except Exception as exc:  # a model or report that cannot be read: said, never a failed check
        result.attribution = {"not_checked": f"{type(exc).__name__}: {exc}"}
        return
    result.attribution = {
        "agreement": measured.agreement,
        "changed": measured.changed,
        "movers": measured.movers,
        "rows": len(rows),
        "window": measured.window,
        "reference": measured.reference,
    }
    if measured.changed:
        result.findings.append(
            f"attribution drift: the feature-importance ranking changed (rank agreement {measured.agreement:.2f} "
            f"< {drift.attribution_min_agreement:.2f} on {len(rows)} rows); moved most: "
            f"{', '.join(measured.movers[:5])}"
        )


def gate_reference(store: TrackingStore, model_name: str, version: str) -> GateReference | None:
    """The model-validation gate's figures for ``version`` (its report.json), or None when it was not judged."""
    import json

    from mlops.monitoring.bias_drift import reference_from_gate_report

    run_id = store.version_tags(model_name, version).get(VALIDATION_RUN_TAG)
    if not run_id:
        return None
    path = store.download(f"runs:/{run_id}/{VALIDATION_REPORT_FILE}")
    return reference_from_gate_report(json.loads(path.read_text(encoding="utf-8")))


def metrics_of(result: DriftResult) -> dict[str, float]:
    values = {
        "rows": float(result.rows),
        "rows_from_summaries": float(result.rows_from_summaries),
        "share_drifted": result.share_drifted,
        "dataset_drift": float(result.dataset_drift),
        "prediction_drift_score": result.prediction_score,
        "retrain": float(result.decision == "retrain"),
        # a distance and a p-value never share a series: a feature's method can change with the window's size
        **{f"drift_{f.name}": f.score for f in result.features if f.p_value is None},
        **{f"drift_{f.name}_p_value": f.p_value for f in result.features if f.p_value is not None},
        "prediction_drift_p_value": float(
            math.nan if result.prediction.get("p_value") is None else result.prediction["p_value"]
        ),
        **{f"estimated_{k}": v for k, v in result.estimated.items()},
        **{f"reference_{k}": v for k, v in result.reference_metrics.items()},
        **{f"realised_{k}": v for k, v in result.realised.items()},
        "performance_drop": float(result.performance_drop),
        "bias_findings": float(sum(f.startswith("bias drift:") for f in result.findings)),
        "attribution_agreement": float(result.attribution.get("agreement", math.nan)),
        **{
            f"{kind}_{metric}_{end}": band[end]
            for kind, bands in (
                ("estimated", result.estimated_bands),
                ("realised", result.realised_bands),
                ("reference", result.reference_bands),
            )
            for metric, band in bands.items()
            for end in ("low", "high")
        },
    }
    return {k: v for k, v in values.items() if v == v}  # NaN (a column absent from the window) is not logged


def log_check(check: Check, store: TrackingStore, reports: dict[str, Path]) -> str:
    """One run in the monitoring experiment; every metric at step = the window's end (epoch seconds)."""
    import mlflow

    result = check.result
    end = datetime.fromisoformat(result.end)
    with store.task_run("drift_monitor") as run:
        mlflow.log_params(
            {
                "model_name": result.model_name,
                "model_version": result.version,
                "since": result.start,
                "until": result.end,
            }
        )
        mlflow.set_tags(
            {
                "mlops.monitor.decision": result.decision,
                "mlops.monitor.reason": "; ".join(result.reasons)[:4000],
            }
        )
        stamp = int(end.timestamp() * 1000)
        metrics = [
            mlflow.entities.Metric(key, value, stamp, int(end.timestamp()))
            for key, value in metrics_of(result).items()
        ]
        store.log_batch(run.info.run_id, metrics=metrics)
        for name, path in reports.items():
            mlflow.log_text(path.read_text(), name)
        return str(run.info.run_id)


def write_reports(check: Check, drift: DriftSettings, json_path: Path, html_path: Path) -> dict[str, Path]:
    """The JSON report (every score), and the HTML report when the window sample is not empty."""
    from mlops.monitoring.drift_report import write_html, write_json

    written = {JSON_REPORT: write_json(check.result, json_path)}
    if check.report_rows and check.sample.frame is not None and len(check.sample.frame):
        rows = check.sample.frame.head(check.report_rows)
        written[HTML_REPORT] = write_html(check.profile, rows, check.result, drift, html_path)
    return written


def record_check(result: DriftResult, run_id: str, workspace_root: str) -> None:
    """The check's decision and reasons on the audit trail (``drift.checked``)."""
    from mlops.governance import audit

    audit.record(
        "drift.checked",
        f"{result.model_name}/{result.version}",
        {
            "decision": result.decision,
            "reasons": result.reasons,
            "drifted_features": result.drifted_features,
            "since": result.start,
            "until": result.end,
            "rows": result.rows,
            "rows_from_summaries": result.rows_from_summaries,
            "findings": result.findings,
        },
        links={"mlflow_run_id": run_id, "model_version": result.version},
        workspace_root=workspace_root or None,
    )


def notify_check(result: DriftResult, settings: AlertSettings | None = None) -> list[str]:
    """Alert people (webhook, :mod:`mlops.governance.alerts`) on a performance drop and on drift; the events sent.

    A failed alert is logged by the alert module and never fails the check.
    """
    from mlops.governance import alerts

    subject = f"{result.model_name}/{result.version}"
    window = {"window": f"{result.start} .. {result.end}", "rows": result.rows, "decision": result.decision}
    sent = []
    if result.performance_drop:
        drops = [r for r in result.reasons if " drop " in r]
        bands = {
            f"{kind} {metric}": f"{band['value']:.3f} [{band['low']:.3f}, {band['high']:.3f}]"
            for kind, figures in (
                ("estimated", result.estimated_bands),
                ("realised", result.realised_bands),
                (reference_name(result.version), result.reference_bands),
            )
            for metric, band in figures.items()
        }
        if alerts.send("estimated_drop", subject, "; ".join(drops), {**window, **bands}, settings):
            sent.append("estimated_drop")
    breaches = [f for f in result.findings if f.startswith("bias drift:")]
    if breaches and alerts.send("bias_drift", subject, "; ".join(breaches), window, settings):
        sent.append("bias_drift")
    changed = [f for f in result.findings if f.startswith("attribution drift:")]
    if changed and alerts.send("drift", subject, "; ".join(changed), window, settings):
        sent.append("drift")
    if result.drifted_features or result.dataset_drift or result.prediction_drift:
        summary = (
            f"{len(result.drifted_features)} feature(s) drifted ({', '.join(result.drifted_features) or 'none'}); "
            f"prediction {prediction_text(result.prediction, result.prediction_score)}"
        )
        if alerts.send("drift", subject, summary, window, settings):
            sent.append("drift")
    return sent
