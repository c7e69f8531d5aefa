"""KFP wrapper for :mod:`components.drift_monitor.monitor`."""

from kfp import dsl
from kfp.dsl import HTML, Artifact, Output, OutputPath

from mlops.images import PLATFORM_IMAGE


@dsl.component(base_image=PLATFORM_IMAGE, install_kfp_package=False)
def check_drift(
    window: dict,
    window_model_name: str,
    window_since: str,
    window_until: str,
    drift: dict,
    audit_workspace: str,
    tracking: dict,
    pipeline_run_id: str,
    report_json: Output[Artifact],
    report_html: Output[HTML],
    reasons: OutputPath(str),  # type: ignore[valid-type]
    run_id: OutputPath(str),  # type: ignore[valid-type]
) -> str:
    """Checks a request-log window against the version's reference profile; returns retrain or none.

    ``window`` and ``drift`` are those sections; ``window_model_name``, ``window_since`` and
    ``window_until`` the per-run settings ``window.model_name``, ``window.since``, ``window.until``.

    The decision is the single return value: kfp.local 2.17 cannot resolve a ``dsl.If`` on a
    named output.
    """
    from pathlib import Path

    from components.drift_monitor.config import DriftSettings, WindowSettings
    from components.drift_monitor.monitor import (
        check_window,
        log_check,
        notify_check,
        record_check,
        write_reports,
    )
    from mlops.monitoring.log_retention import retain_after_check
    from mlops.settings import from_section
    from mlops.tracking.store import TrackingStore

    store = TrackingStore.for_task(tracking, pipeline_run_id)
    window_settings = from_section(
        WindowSettings, window, model_name=window_model_name, since=window_since, until=window_until
    )
    drift_settings = from_section(DriftSettings, drift)
    check = check_window(window_settings, drift_settings, store, window_settings.request_log_uri)
    reports = write_reports(check, drift_settings, Path(report_json.path), Path(report_html.path))
    mlflow_run_id = log_check(check, store, reports)
    record_check(check.result, mlflow_run_id, audit_workspace)
    retained = retain_after_check(
        window_settings.request_log_uri,
        window_settings.model_name,
        check.profile,
        check.result.version,
        window_settings.request_log_retention_days,
        audit_workspace,
    )
    notify_check(
        check.result
    )  # webhook alerts (MLOPS_ALERT_WEBHOOK_URL); a failed alert never fails the check
    result = check.result
    print(f"{result.decision}: {'; '.join(result.reasons)}")
    if retained is not None:
        print(
            f"request log retention: {retained.rows_deleted} row(s) before {retained.cutoff.isoformat()} deleted "
            f"({len(retained.files_deleted)} file(s) deleted, {len(retained.files_rewritten)} rewritten)"
        )
    Path(reasons).write_text("; ".join(result.reasons))
    Path(run_id).write_text(mlflow_run_id)
    return result.decision
