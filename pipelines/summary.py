"""What ``mlops run`` prints around a run: where it logs, and where it stopped if it failed."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from mlops.workspace import Workspace
from pipelines.local_run import PipelineFailed

if TYPE_CHECKING:
    from mlops.tracking import ResolvedTracking

# (task folder, output name, label) of the files a person wants to open after a run.
REPORTS = (
    ("validate-data", "report_html", "data report"),
    ("validate-data", "report_json", "data report json"),
    ("evaluate-model", "confusion_matrix", "confusion"),
    ("evaluate-model", "roc_curve", "ROC curve"),
    ("metrics-gate", "report", "metrics gate"),
    ("validate-model", "report_html", "model report"),
    ("validate-model", "report_json", "model report json"),
)


def report_paths(run_dir: Path | None) -> list[tuple[str, Path]]:
    if run_dir is None:
        return []
    found = []
    for task, output, label in REPORTS:
        path = run_dir / task / output
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.is_file())
            path = files[0] if files else path
        if path.exists():
            found.append((label, path))
    return found


def print_start(pipeline: str, workspace: Workspace, tracking: ResolvedTracking) -> None:
    """The resolved configuration, before anything runs: a wrong store is visible at once."""
    lines = [f"Running pipeline {pipeline!r} with kfp.local.", f"  {'workspace':<17} {workspace.root}"]
    print("\n".join([*lines, *tracking.describe()]), flush=True)


def print_failure(failure: PipelineFailed, workspace: Workspace) -> None:
    lines = ["", f"Run FAILED. Workspace: {workspace.root}"]
    lines += [f"  {label:<17} {path}" for label, path in report_paths(failure.run_dir)]
    lines += [f"failed step: {failure.task}", f"reason: {failure.reason}"]
    print("\n".join(lines))
