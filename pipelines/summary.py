"""What ``mlops run`` prints at the end: where everything is, or why it stopped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mlops.workspace import Workspace
from pipelines.local_run import PipelineFailed

# (task folder, output name) of the files a person wants to open after a run.
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


def print_summary(
    workspace: Workspace, arguments: dict[str, Any], version: str, run_dir: Path | None
) -> None:
    import mlflow

    model_name = arguments.get("model_name") or "credit-default"
    client = mlflow.MlflowClient(tracking_uri=workspace.tracking_uri, registry_uri=workspace.tracking_uri)
    model_version = client.get_model_version(model_name, version)
    aliases = ", ".join(sorted(model_version.aliases)) or "none"
    tags = model_version.tags
    lines = [
        "",
        "Run finished.",
        f"  {'workspace':<17} {workspace.root}",
        f"  {'tracking URI':<17} {workspace.tracking_uri}",
        f"  {'model':<17} {model_name} version {version} (aliases: {aliases})",
        f"  {'model URI':<17} models:/{model_name}/{version}",
        f"  {'decision':<17} {tags.get('mlops.decision', '?')}: {tags.get('mlops.reason', '')}",
        f"  {'dataset digest':<17} {tags.get('mlops.dataset_digest', '?')}",
    ]
    if run_dir is not None:
        lines.append(f"  {'pipeline run':<17} {run_dir}")
    lines += [f"  {label:<17} {path}" for label, path in report_paths(run_dir)]
    lines.append(f"  {'browse runs':<17} mlops ui")
    print("\n".join(lines))


def print_failure(failure: PipelineFailed, workspace: Workspace) -> None:
    lines = ["", f"Run FAILED. Workspace: {workspace.root}"]
    lines += [f"  {label:<17} {path}" for label, path in report_paths(failure.run_dir)]
    lines += [f"failed step: {failure.task}", f"reason: {failure.reason}"]
    print("\n".join(lines))
