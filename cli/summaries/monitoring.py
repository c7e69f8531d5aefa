"""What ``mlops monitor`` / ``mlops run monitoring`` prints at the end: the decision, the scores, the reports."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from cli.local_run import LocalRun
from mlops.workspace import Workspace

CHECK_TASK = "check-drift"
TRIGGER_TASK = "trigger-retraining"


def print_summary(workspace: Workspace, settings: Mapping[str, Any], result: LocalRun) -> None:
    """The check's decision, scores and reports (``settings``: the run's settings by address)."""
    from mlops.monitoring.drift_reasons import prediction_text  # numpy: only when a summary prints

    run_dir = result.run_dir
    report = run_dir / CHECK_TASK / "report_json" if run_dir else None
    lines = ["", f"Monitoring finished: decision {result.output}."]
    if report is not None and report.is_file():
        data = json.loads(report.read_text())
        lines.append(
            f"  {'window':<17} {data['start']} .. {data['end']} ({data['rows']} rows, v{data['version']})"
        )
        lines.append(
            f"  {'drifted features':<17} {', '.join(data['drifted_features']) or 'none'} "
            f"({data['share_drifted']:.0%})"
        )
        judged = prediction_text(data.get("prediction", {}), data["prediction_score"])
        lines.append(f"  {'prediction drift':<17} {judged}")
        for label, values in (
            ("estimated", data["estimated"]),
            ("reference (test)", data["reference_metrics"]),
            ("realised", data["realised"]),
        ):
            if values:
                shown = ", ".join(f"{k} {v:.3f}" for k, v in sorted(values.items()) if k != "labelled_rows")
                lines.append(f"  {label:<17} {shown}")
        lines.append(f"  {'reasons':<17} {'; '.join(data['reasons'])}")
        lines.append(f"  {'report json':<17} {report}")
        html = run_dir / CHECK_TASK / "report_html" if run_dir else None
        if html is not None and html.is_file():
            lines.append(f"  {'report html':<17} {html}")
    if run_dir is not None and (run_dir / TRIGGER_TASK).exists():
        lines.append(f"  {'retraining':<17} see {run_dir / TRIGGER_TASK}")
    lines.append(f"  {'trend':<17} mlops ui, experiment {settings['tracking.experiment']!r}")
    print("\n".join(lines))
