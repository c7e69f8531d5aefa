"""The metrics gate: may the challenger become champion?

A gate decides, records its decision and reason as tags on the model version
(so the registry alone tells why a version is or is not live) and writes a
report. Only :func:`promote` moves the ``champion`` alias, and the pipeline
calls it only when the decision is ``promote``.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field

from mlops.gates import PROMOTE, REJECT, Decision
from mlops.settings import SETTINGS_CONFIG
from mlops.tracking.aliases import move_alias
from mlops.tracking.context import TrackingContext, task_run
from mlops.vocabulary import CHAMPION, MODEL_VERSION_TAG, gate_tag

__all__ = ["PROMOTE", "REJECT", "Decision", "MetricsGatePolicy", "decide", "promote", "record"]


class MetricsGatePolicy(BaseModel):
    """Thresholds a challenger must clear on held-out test data."""

    model_config = SETTINGS_CONFIG

    auc_floor: float = Field(default=0.7, ge=0.0, le=1.0)
    """Minimum test ROC AUC."""
    max_auc_regression: float = Field(default=0.01, ge=0.0, le=1.0)
    """How much lower than the champion's AUC (same data) is tolerated."""


def decide(policy: MetricsGatePolicy, test_auc: float, champion_auc: float, has_champion: bool) -> Decision:
    metrics = {"test_auc": test_auc, "champion_auc": champion_auc if has_champion else float("nan")}
    failures = []
    if not test_auc >= policy.auc_floor:
        failures.append(f"test_auc {test_auc:.4f} is below the floor {policy.auc_floor:.4f}")
    if has_champion and test_auc < champion_auc - policy.max_auc_regression:
        failures.append(
            f"test_auc {test_auc:.4f} is worse than the champion's {champion_auc:.4f} "
            f"by more than the allowed {policy.max_auc_regression:.4f}"
        )
    if failures:
        return Decision("metrics", REJECT, "; ".join(failures), metrics)
    versus = f"champion {champion_auc:.4f}" if has_champion else "no current champion"
    reason = f"test_auc {test_auc:.4f} >= floor {policy.auc_floor:.4f}; {versus}"
    return Decision("metrics", PROMOTE, reason, metrics)


def record(
    decision: Decision, model_name: str, version: str, context: TrackingContext, report_path: Path
) -> None:
    """Write this gate's decision as version tags, an MLflow run and a JSON report.

    The overall ``mlops.decision``/``mlops.reason`` tags are written once, after every
    gate has decided, by :func:`components.promotion_gate.combine.record_overall`.
    """
    import mlflow

    report = {
        **asdict(decision),
        "model_name": model_name,
        "version": version,
        "decided_at": datetime.now(UTC).isoformat(),
    }
    report_path.parent.mkdir(parents=True, exist_ok=True)
    report_path.write_text(json.dumps(report, indent=2, default=str))
    with task_run(context, f"gate_{decision.gate}"):
        client = mlflow.MlflowClient()
        decision_tag = gate_tag(decision.gate, "decision")
        client.set_model_version_tag(model_name, version, decision_tag, decision.decision)
        client.set_model_version_tag(model_name, version, gate_tag(decision.gate, "reason"), decision.reason)
        mlflow.set_tags({decision_tag: decision.decision, MODEL_VERSION_TAG: version})
        mlflow.log_artifact(str(report_path), artifact_path="gate")
        audit_decision(decision, model_name, version, context)


def audit_decision(decision: Decision, model_name: str, version: str, context: TrackingContext) -> None:
    """One ``gate.decided`` record (call inside the gate's MLflow run)."""
    from mlops.governance.audit import record_in_run

    subject = f"{model_name}/{version}"
    record_in_run(
        "gate.decided",
        subject,
        {
            "gate": decision.gate,
            "decision": decision.decision,
            "reason": decision.reason,
            "metrics": decision.metrics,
        },
        pipeline_run_id=context.pipeline_run_id,
        model_version=subject,
    )


def promote(model_name: str, version: str, context: TrackingContext) -> str | None:
    """Point ``champion`` at ``version``; return the version it replaced, if any."""
    import mlflow

    context.apply()
    client = mlflow.MlflowClient()
    try:
        previous: str | None = str(client.get_model_version_by_alias(model_name, CHAMPION).version)
    except mlflow.exceptions.MlflowException:
        previous = None
    move_alias(
        client,
        model_name,
        CHAMPION,
        version,
        previous,
        reason="every gate decided promote",
        links={"pipeline_run_id": context.pipeline_run_id},
    )
    return previous
