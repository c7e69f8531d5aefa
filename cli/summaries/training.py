"""What ``mlops run training`` prints at the end: the key metrics, the decision and where everything is."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cli.console.display import duration
from cli.console.figures import split_reasons, task_outputs
from cli.local_run import LocalRun
from cli.summaries.limits import COMMAND_LINE, override_text, record_limits
from cli.summaries.run_outline import (
    SUCCESS_REPORTS,
    data_note_lines,
    decision_lines,
    report_paths,
    row,
    run_lines,
)
from mlops.vocabulary import (
    APPROVAL_STATUS_TAG,
    DECISION_TAG,
    PENDING_APPROVAL,
    PIPELINE_RUN_ID_TAG,
    REASON_TAG,
    STATUS_TAG,
    TAG_PREFIX,
    TASK_TAG,
    UNDECIDED_TAG,
)
from mlops.workspace import Workspace

KFP_RUN_ID_TAG = f"{TAG_PREFIX}kfp_run_id"  # the Lineage field the register step tags


def version_facts(tracking_uri: str, model_name: str, version: str) -> tuple[list[str], dict[str, str]]:
    """A registered version's aliases and tags: through the run's own tracking server while it still answers
    (:mod:`mlops.tracking.served`; no MLflow import, which with opening the store took about 4 s after
    the last step), else from the store itself."""
    from mlops.tracking.store import TrackingStore

    store = TrackingStore.for_task({"tracking_uri": tracking_uri}, "")
    return store.version_aliases_and_tags(model_name, version)


def test_auc(tracking_uri: str, result: LocalRun, experiment: str, kfp_run_id: str) -> float | None:
    """The evaluate step's test ROC AUC: from this run's folder, else (a cached step) from MLflow."""
    if result.run_dir is not None:
        params, _ = task_outputs(result.run_dir / "evaluate-model")
        if isinstance(params.get("test_auc"), int | float):
            return float(params["test_auc"])
    from mlops.tracking.store import TrackingStore

    store = TrackingStore.from_uri(tracking_uri)
    found = store.experiment_by_name(experiment)
    if found is None or not kfp_run_id:
        return None
    runs = store.find_runs(
        [found.experiment_id],
        f"tags.`{PIPELINE_RUN_ID_TAG}` = '{kfp_run_id}' and tags.`{TASK_TAG}` = 'evaluate'",
        max_results=1,
    )
    return runs[0].data.metrics.get("test_roc_auc") if runs else None


def approval_lines(model_name: str, version: str, tags: Mapping[str, str]) -> list[str]:
    """Where the version's second-person sign-off stands, and for a pending one what to run next."""
    status = tags.get(APPROVAL_STATUS_TAG, "")
    if not status:
        return []
    if status != PENDING_APPROVAL:
        return [row("approval", status)]
    return [
        row("approval", "pending-approval: not made champion (gate.require_approval)"),
        row("next", f"a second person runs: mlops approve {model_name}@{version} --key THEIR_KEY"),
    ]


def print_summary(workspace: Workspace, settings: Mapping[str, Any], result: LocalRun) -> dict[str, str]:
    """Test AUC, model version and aliases, the gates' decision (a reason a line), reports; returns the facts.

    ``settings``: the run's settings by address (``PipelineForm.values``).
    """
    version = str(result.output)
    model_name = settings["registration.model_name"]
    tracking_uri = settings["tracking.tracking_uri"]
    version_aliases, tags = version_facts(tracking_uri, model_name, version)
    aliases = ", ".join(sorted(version_aliases)) or "none"
    auc = test_auc(tracking_uri, result, settings["tracking.experiment"], tags.get(KFP_RUN_ID_TAG, ""))
    decision = tags.get(DECISION_TAG, "?")
    run_name = result.run_dir.name if result.run_dir is not None else ""
    overrides, _ = record_limits(workspace, "training", settings, model_name, version, run_name)
    changed = [override_text(limit) for limit in overrides]
    status = tags.get(STATUS_TAG, "")
    undecided = [line for line in tags.get(UNDECIDED_TAG, "").splitlines() if line.strip()]
    lines = [
        "",
        f"Run finished in {duration(result.seconds)}.",
        row("test AUC", f"{auc:.4f}" if auc is not None else "?"),
        row("model", f"{model_name} version {version} (aliases: {aliases})"),
        row("model URI", f"models:/{model_name}/{version}"),
        *decision_lines(decision, tags.get(REASON_TAG, ""), status, undecided),
        *approval_lines(model_name, version, tags),
        *[row("limit changed", f"{text}, on the {COMMAND_LINE}") for text in changed],
        *data_note_lines(result.run_dir),
        *run_lines(result),
        *[row(label, path) for label, path in report_paths(result.run_dir, SUCCESS_REPORTS)],
        row("browse runs", "mlops ui · mlops runs"),
    ]
    print("\n".join(lines))
    facts = {"model": f"{model_name} v{version}", "decision": decision, "aliases": aliases}
    if status:
        facts["status"] = status
    if tags.get(APPROVAL_STATUS_TAG):
        facts["approval"] = tags[APPROVAL_STATUS_TAG]
    if undecided:
        facts["undecided"] = "\n".join(undecided)
    if changed:
        facts["limits changed"] = "; ".join(changed)
    if auc is not None:
        facts["test AUC"] = f"{auc:.4f}"
    facts["reasons"] = "\n".join(split_reasons(tags.get(REASON_TAG, "")))
    return facts
