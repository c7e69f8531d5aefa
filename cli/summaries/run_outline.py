"""What ``mlops run`` prints around a run: where it logs, what it found, and where it stopped if it failed."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from cli.console.display import duration
from cli.console.figures import MAX_REASONS, REASON_WIDTH, short, split_reasons

if TYPE_CHECKING:
    from cli.local_run import LocalRun, PipelineFailed
    from mlops.tracking.context import ResolvedTracking
    from mlops.workspace import Workspace

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
SUCCESS_REPORTS = ("data report", "model report", "metrics gate")
"""After a successful run: the reports a person opens first (the others sit beside them)."""


def report_paths(run_dir: Path | None, labels: tuple[str, ...] | None = None) -> list[tuple[str, Path]]:
    if run_dir is None:
        return []
    found = []
    for task, output, label in REPORTS:
        if labels is not None and label not in labels:
            continue
        path = run_dir / task / output
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.is_file())
            path = files[0] if files else path
        if path.exists():
            found.append((label, path))
    return found


def data_note_lines(run_dir: Path | None) -> list[str]:
    """validate-data's notes (suite entries skipped for the schema file, columns it does not know), a line each."""
    import json

    if run_dir is None:
        return []
    found = sorted((run_dir / "validate-data" / "report_json").rglob("*"))
    files = [p for p in found if p.is_file()] or [run_dir / "validate-data" / "report_json"]
    try:
        notes = json.loads(files[0].read_text(encoding="utf-8")).get("notes") or []
    except (OSError, ValueError):
        return []
    return [row("data note", note) for note in notes]


def row(label: str, value: object) -> str:
    return f"  {label:<17} {value}"


def reason_lines(reasons: list[str], more_in: str = "the report") -> list[str]:
    """At most :data:`MAX_REASONS` reasons, each whole (wrapped, never cut before its figures and
    intervals), then how many more the full text holds."""
    import textwrap

    lines = []
    for reason in reasons[:MAX_REASONS]:
        wrapped = textwrap.wrap(
            " ".join(reason.split()), REASON_WIDTH, break_on_hyphens=False, break_long_words=False
        )
        lines += [f"    {'-' if i == 0 else ' '} {line}" for i, line in enumerate(wrapped)]
    if len(reasons) > MAX_REASONS:
        lines.append(f"    … and {len(reasons) - MAX_REASONS} more in {more_in}")
    return lines


def decision_lines(decision: str, reason: str, status: str = "", undecided: Sequence[str] = ()) -> list[str]:
    """The gates' decision and status on one line, each reason on its own short line below it.

    A plain pass fits one line. A verdict with checks the data could not decide never does: whether
    promoted (the policy let them through) or not, every undecided check gets a line of its own."""
    from mlops.gates import NOT_CONCLUSIVE, status_word

    shown = f"{decision}, {status_word(status)}" if status else decision
    if undecided or status == NOT_CONCLUSIVE:
        verb = (
            "passed as not conclusive (the policy lets them through)"
            if decision == "promote"
            else "held back"
        )
        lines = [row("decision", shown)]
        if decision != "promote":
            lines += reason_lines(split_reasons(reason), "the gate reports")
        lines.append(
            row("not conclusive", f"{len(undecided)} check(s) the test rows could not decide, {verb}:")
        )
        return [*lines, *reason_lines(list(undecided), "the model report")]
    if decision == "promote" or not reason:
        return [row("decision", shown + (f" ({short(reason, 100)})" if reason else ""))]
    return [row("decision", shown), *reason_lines(split_reasons(reason), "the gate reports")]


def print_start(pipeline: str, workspace: Workspace, tracking: ResolvedTracking) -> None:
    """The resolved configuration, before anything runs: a wrong store is visible at once."""
    lines = [f"Running pipeline {pipeline!r} with kfp.local.", row("workspace", workspace.root)]
    print("\n".join([*lines, *tracking.describe()]), flush=True)


def run_lines(result: LocalRun) -> list[str]:
    """Where the run's files and logs are."""
    lines = []
    if result.run_dir is not None:
        lines.append(row("pipeline run", result.run_dir))
    if result.log_dir is not None:
        lines.append(row("step logs", f"{result.log_dir}/<step>.log"))
    return lines


def print_failure(failure: PipelineFailed, workspace: Workspace) -> None:
    """The failed step, why (at most five reasons), the reports, and last the step's log."""
    run = failure.run
    lines = ["", f"Run FAILED at step {failure.task} after {duration(run.seconds)}."]
    lines.append(row("reason", short(failure.headline)))
    lines += reason_lines(failure.details, "the report" if report_paths(run.run_dir) else "the log")
    lines += [
        row(label, path) for label, path in report_paths(run.run_dir, ("data report", "data report json"))
    ]
    if run.run_dir is not None:
        lines.append(row("pipeline run", run.run_dir))
    log = run.log_path(failure.task)
    lines.append(row("log", log if log is not None and log.exists() else run.log_dir))
    print("\n".join(lines))
