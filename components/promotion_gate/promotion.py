"""The metrics gate: may the challenger become champion?

A gate decides, records its decision and reason as tags on the model version
(so the registry alone tells why a version is or is not live) and writes a
report. Only :func:`promote` moves the ``champion`` alias, and the pipeline
calls it only when the decision is ``promote``.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from components.promotion_gate.config import MetricsGatePolicy
from mlops.gates import PROMOTE, REJECT, Decision
from mlops.tracking.store import RecordingRun, TrackingStore
from mlops.vocabulary import CHAMPION, MODEL_VERSION_TAG, gate_tag

if TYPE_CHECKING:
    from mlops.governance.approvers import Approvers

__all__ = ["PROMOTE", "REJECT", "Decision", "MetricsGatePolicy", "decide", "promote", "record"]


def decide(
    policy: MetricsGatePolicy,
    test_auc: float,
    champion_auc: float,
    has_champion: bool,
    comparison_auc: float | None = None,
    top_feature: str = "",
    top_feature_auc: float = float("nan"),
    allowed: tuple[str, ...] = (),
    not_compared: str = "",
) -> Decision:
    """Promote or reject on test AUC: above the floor, not worse than the champion on the rows the champion
    did not learn from (``comparison_auc`` is the challenger on those rows; None: ``test_auc``), and not a
    result one feature alone explains (``top_feature``/``top_feature_auc``, a leak) unless the schema
    acknowledges that feature (``allowed``: its ``allowed_leaks``). ``not_compared`` says why a champion
    that exists was not scored (it needs columns this run leaves out): the reason says so."""
    versus_auc = test_auc if comparison_auc is None else comparison_auc
    metrics = {"test_auc": test_auc, "champion_auc": champion_auc if has_champion else float("nan")}
    if comparison_auc is not None:
        metrics["comparison_auc"] = comparison_auc if has_champion else float("nan")
    if top_feature:
        metrics["top_feature_auc"] = top_feature_auc
    failures = []
    if not test_auc >= policy.auc_floor:
        failures.append(f"test_auc {test_auc:.4f} is below the floor {policy.auc_floor:.4f}")
    if has_champion and versus_auc < champion_auc - policy.max_auc_regression:
        failures.append(
            f"test_auc {versus_auc:.4f} is worse than the champion's {champion_auc:.4f} "
            f"by more than the allowed {policy.max_auc_regression:.4f}"
            + (
                " (both on the test rows the champion did not learn from)"
                if comparison_auc is not None
                else ""
            )
        )
    leak = "" if top_feature in allowed else too_good(policy, test_auc, top_feature, top_feature_auc)
    if leak:
        failures.append(leak)
    if failures:
        return Decision("metrics", REJECT, "; ".join(failures), metrics)
    versus = f"champion {champion_auc:.4f}" if has_champion else not_compared or "no current champion"
    if has_champion and comparison_auc is not None:
        versus += f" vs {comparison_auc:.4f} on the rows it did not learn from"
    reason = f"test_auc {test_auc:.4f} >= floor {policy.auc_floor:.4f}; {versus}"
    return Decision("metrics", PROMOTE, reason, metrics)


def too_good(policy: MetricsGatePolicy, test_auc: float, feature: str, feature_auc: float) -> str:
    """The finding when a test AUC at or above ``too_good_auc`` is matched (within ``leak_margin``) by one
    feature alone; '' otherwise."""
    if not feature or not test_auc >= policy.too_good_auc:
        return ""
    if not feature_auc >= test_auc - policy.leak_margin:
        return ""
    return (
        f"test_auc {test_auc:.4f} is too good to be true: feature {feature!r} alone scores AUC {feature_auc:.4f} "
        f"(within {policy.leak_margin:.2f} of the model, whose AUC is at or above {policy.too_good_auc:.2f}), "
        "likely a column recorded after the outcome or derived from the label: drop it (ignored_columns in "
        "the schema file) and train again"
    )


def report_metrics(metrics: dict[str, float]) -> tuple[dict[str, float | None], dict[str, str]]:
    """The gate's figures as valid JSON: an undefined one (NaN) is null, with the reason beside it."""
    reasons = {
        "champion_auc": "no current champion to compare with",
        "comparison_auc": "no current champion to compare with",
        "top_feature_auc": "no feature was scored alone",
    }
    clean: dict[str, float | None] = {}
    why: dict[str, str] = {}
    for key, value in metrics.items():
        if isinstance(value, float) and not math.isfinite(value):
            clean[key] = None
            why[key] = reasons.get(key, "undefined for this run")
        else:
            clean[key] = value
    return clean, why


def record(
    decision: Decision,
    model_name: str,
    version: str,
    store: TrackingStore,
    report_path: Path,
    details: dict[str, Any] | None = None,
) -> None:
    """Write this gate's decision as version tags, an MLflow run and a JSON report.

    The overall ``mlops.decision``/``mlops.reason`` tags are written once, after every
    gate has decided, by :func:`components.promotion_gate.combine.record_overall`. ``details`` go into the
    report beside the decision (a gate's findings). Recorded through :meth:`TrackingStore.recording_run`:
    on a served store the task never imports MLflow.
    """
    metrics, null_because = report_metrics(decision.metrics)
    report = {
        **asdict(decision),
        "metrics": metrics,
        "null_because": null_because,
        "model_name": model_name,
        "version": version,
        "decided_at": datetime.now(UTC).isoformat(),
        **(details or {}),
    }
    report_path.parent.mkdir(parents=True, exist_ok=True)
    report_path.write_text(json.dumps(report, indent=2, default=str, allow_nan=False))
    with store.recording_run(f"gate_{decision.gate}") as run:
        store.record_gate(model_name, version, decision.gate, decision.decision, decision.reason)
        run.set_tags({gate_tag(decision.gate, "decision"): decision.decision, MODEL_VERSION_TAG: version})
        run.log_artifact(report_path, artifact_path="gate")
        audit_decision(decision, model_name, version, run)


def audit_decision(decision: Decision, model_name: str, version: str, run: RecordingRun) -> None:
    """One ``gate.decided`` record in the gate's task run ``run``."""
    subject = f"{model_name}/{version}"
    run.audit(
        "gate.decided",
        subject,
        {
            "gate": decision.gate,
            "decision": decision.decision,
            "reason": decision.reason,
            "metrics": report_metrics(decision.metrics)[0],
        },
        model_version=subject,
    )


def promote(
    model_name: str,
    version: str,
    store: TrackingStore,
    *,
    require_approval: bool = False,
    approvers: Approvers | None = None,
    reason: str = "every gate decided promote",
) -> str | None:
    """Point ``champion`` at ``version``; return the version it replaced, if any (the audit record
    links the store's pipeline run).

    A version that already is champion is left as it is: no alias move, no tag, no audit record
    (a ``--cache`` re-run decides promote again for the same version and must not log a move).
    With ``require_approval``, or for a version put under approval, it is refused
    (:class:`mlops.governance.approvers.ApprovalError`, naming what is missing) unless its approval
    verifies against the trusted approvers' keys (``approvers``; None: the environment's or workspace's).
    """
    from mlops.governance.lease import lease
    from mlops.tracking.approval_registry import check

    check(store, model_name, version, require_approval, approvers)

    # Read and move under one lease: two runs promoting at once leave one linear champion history.
    with lease(f"{model_name}-{CHAMPION}", tracking_uri=store.tracking_uri):
        previous = store.alias_version(model_name, CHAMPION)
        if previous == version:
            return previous
        store.move_alias(model_name, CHAMPION, version, previous, reason=reason)
    return previous
