"""KFP wrapper for :mod:`components.drift_monitor.monitor`."""

from kfp import dsl
from kfp.dsl import HTML, Artifact, Output, OutputPath

from mlops.images import PLATFORM_IMAGE


@dsl.component(base_image=PLATFORM_IMAGE, install_kfp_package=False)
def check_drift(
    window: dict,
    drift: dict,
    feature_methods: dict,
    feature_thresholds: dict,
    audit_workspace: str,
    tracking: dict,
    pipeline_run_id: str,
    report_json: Output[Artifact],
    report_html: Output[HTML],
    reasons: OutputPath(str),  # type: ignore[valid-type]
    run_id: OutputPath(str),  # type: ignore[valid-type]
) -> str:
    """Checks a request-log window against the version's reference profile; returns retrain or none.

    The decision is the single return value: kfp.local 2.17 cannot resolve a ``dsl.If`` on a
    named output.
    """
    from pathlib import Path

    from components.drift_monitor.config import DriftSettings, WindowSettings
    from components.drift_monitor.monitor import check_window, log_check, record_check, write_reports
    from mlops.settings import from_flat
    from mlops.tracking.context import TrackingContext

    context = TrackingContext.from_dict(tracking, pipeline_run_id)
    window_settings = from_flat(WindowSettings, window)
    drift_settings = from_flat(
        DriftSettings, {**drift, "feature_methods": feature_methods, "feature_thresholds": feature_thresholds}
    )
    check = check_window(
        window_settings, drift_settings, context.tracking_uri, window_settings.request_log_uri
    )
    reports = write_reports(check, drift_settings, Path(report_json.path), Path(report_html.path))
    mlflow_run_id = log_check(check, context, reports)
    record_check(check.result, mlflow_run_id, audit_workspace)
    result = check.result
    print(f"{result.decision}: {'; '.join(result.reasons)}")
    Path(reasons).write_text("; ".join(result.reasons))
    Path(run_id).write_text(mlflow_run_id)
    return result.decision
