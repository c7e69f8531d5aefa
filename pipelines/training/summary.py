"""What ``mlops run training`` prints at the end: where everything is."""

from __future__ import annotations

from typing import Any

from mlops.registry import DATASET_DIGEST_TAG, DECISION_TAG, REASON_TAG
from mlops.workspace import Workspace
from pipelines.local_run import LocalRun
from pipelines.summary import report_paths


def print_summary(workspace: Workspace, arguments: dict[str, Any], result: LocalRun) -> None:
    """Where everything is: store, model version and aliases, the gates' decision, the reports."""
    import mlflow

    version, run_dir = str(result.output), result.run_dir
    model_name = arguments["model_name"]
    tracking_uri = arguments["tracking_uri"]
    client = mlflow.MlflowClient(tracking_uri=tracking_uri, registry_uri=tracking_uri)
    model_version = client.get_model_version(model_name, version)
    aliases = ", ".join(sorted(model_version.aliases)) or "none"
    tags = model_version.tags
    lines = [
        "",
        "Run finished.",
        f"  {'workspace':<17} {workspace.root}",
        f"  {'tracking URI':<17} {tracking_uri}",
        f"  {'model':<17} {model_name} version {version} (aliases: {aliases})",
        f"  {'model URI':<17} models:/{model_name}/{version}",
        f"  {'decision':<17} {tags.get(DECISION_TAG, '?')}: {tags.get(REASON_TAG, '')}",
        f"  {'dataset digest':<17} {tags.get(DATASET_DIGEST_TAG, '?')}",
    ]
    if run_dir is not None:
        lines.append(f"  {'pipeline run':<17} {run_dir}")
    lines += [f"  {label:<17} {path}" for label, path in report_paths(run_dir)]
    lines.append(f"  {'browse runs':<17} mlops ui")
    print("\n".join(lines))
