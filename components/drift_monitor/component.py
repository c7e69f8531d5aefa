"""KFP wrapper for :mod:`components.drift_monitor.monitor`."""

from typing import NamedTuple

from kfp import dsl
from kfp.dsl import HTML, Artifact, Output

from mlops.images import PLATFORM_IMAGE


@dsl.component(base_image=PLATFORM_IMAGE, install_kfp_package=False)
def check_drift(
    window: dict,
    drift: dict,
    feature_methods: dict,
    feature_thresholds: dict,
    audit_workspace: str,
    tracking: dict,
    report_json: Output[Artifact],
    report_html: Output[HTML],
) -> NamedTuple("DriftOutputs", [("decision", str), ("reasons", str), ("run_id", str)]):  # type: ignore[valid-type]
    """Checks a request-log window against the version's reference profile; decision retrain or none."""
    from collections import namedtuple
    from pathlib import Path

    from components.drift_monitor.config import DriftSettings, WindowSettings
    from components.drift_monitor.monitor import check_window, log_check, record_check, write_reports
    from mlops.settings import from_flat
    from mlops.tracking import TrackingContext

    context = TrackingContext.from_dict(tracking)
    window_settings = from_flat(WindowSettings, window)
    drift_settings = from_flat(
        DriftSettings, {**drift, "feature_methods": feature_methods, "feature_thresholds": feature_thresholds}
    )
    check = check_window(
        window_settings, drift_settings, context.tracking_uri, window_settings.request_log_uri
    )
    reports = write_reports(check, drift_settings, Path(report_json.path), Path(report_html.path))
    run_id = log_check(check, context, reports)
    record_check(check.result, run_id, audit_workspace)
    result = check.result
    print(f"{result.decision}: {'; '.join(result.reasons)}")
    DriftOutputs = namedtuple("DriftOutputs", ["decision", "reasons", "run_id"])
    return DriftOutputs(result.decision, "; ".join(result.reasons), run_id)
