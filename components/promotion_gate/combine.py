"""Several gates, one verdict: promote only when every gate says promote.

Why a task and not one ``dsl.If`` per gate: the overall ``mlops.decision`` and
``mlops.reason`` version tags must be written after every gate has finished,
or the last gate to finish overwrites another gate's rejection; and the
pipeline then has one condition to branch on.

Why the decision is a single ``str`` return and the reason an ``OutputPath``:
kfp.local 2.17 resolves a ``dsl.If`` condition on a named output
(``task.outputs["decision"]`` of a ``NamedTuple``) as if it were a parent
input, logs "Could not resolve parent input: <task>-decision" and treats the
condition as false, so the guarded task silently never runs. Conditions on
``task.outputs["Output"]`` (the single return value) resolve, nested or not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mlops.gates import OVERALL, Decision, combine
from mlops.vocabulary import (
    APPROVAL_STATUS_TAG,
    CHALLENGER,
    DECISION_TAG,
    MODEL_VERSION_TAG,
    PENDING_APPROVAL,
    REASON_TAG,
    STATUS_TAG,
    UNDECIDED_TAG,
    clip,
)

if TYPE_CHECKING:
    from mlops.tracking.store import TrackingStore

__all__ = ["combine", "gate_decision", "overall_tags", "record_overall", "verdict_output"]


def gate_decision(gate: str, decision: str, reason: str, verdict: str = "") -> Decision:
    """A gate's decision as its task handed it over: the whole decision (``verdict``, JSON, with its status
    and undecided checks) when given, else its decision and reason (status pass or fail).

    A verdict that disagrees with the task's own decision output is refused, not reconciled."""
    if not verdict:
        return Decision(gate, decision, reason, {})
    found = Decision.from_json(verdict)
    if found.decision != decision:
        raise ValueError(
            f"gate {gate!r} returned {decision!r} but its verdict says {found.decision!r}; "
            "re-run the gate: its outputs come from different runs"
        )
    return Decision(gate, found.decision, found.reason, found.metrics, found.status, found.undecided)


def overall_tags(decision: Decision) -> dict[str, str]:
    """The version tags of the overall verdict: decision, status, reason and the undecided checks, one a
    line (empty when none, so a re-decided version keeps no stale list)."""
    return {
        DECISION_TAG: decision.decision,
        STATUS_TAG: decision.status,
        REASON_TAG: clip(decision.reason),
        UNDECIDED_TAG: clip("\n".join(decision.undecided)),
    }


def verdict_output(decision: Decision, require_approval: bool) -> str:
    """What the pipeline branches on: the decision, or ``pending-approval`` for a promote that a second
    person must sign off first (then neither the canary nor the promotion runs; the step succeeds)."""
    return PENDING_APPROVAL if decision.promote and require_approval else decision.decision


def record_overall(
    decision: Decision, model_name: str, version: str, store: TrackingStore, *, require_approval: bool = False
) -> None:
    """Tag the verdict on the version, then make it the ``challenger``: the alias moves only once
    every gate has decided (promote or reject), so a run whose gate crashed leaves none behind.
    A promote under ``require_approval`` marks the version ``pending-approval`` (an ``approval.requested``
    record) unless it already carries an approval status (a ``--cache`` re-run keeps a decision made)."""
    with store.recording_run(f"gate_{OVERALL}") as run:
        store.tag_version(model_name, version, overall_tags(decision))
        if decision.promote and require_approval:
            from mlops.tracking.approval_registry import request

            if not store.version_tags(model_name, version).get(APPROVAL_STATUS_TAG):
                request(model_name, version, store, run)
        run.set_tags(
            {DECISION_TAG: decision.decision, STATUS_TAG: decision.status, MODEL_VERSION_TAG: version}
        )
        run.audit(
            "gate.decided",
            f"{model_name}/{version}",
            {
                "gate": OVERALL,
                "decision": decision.decision,
                "status": decision.status,
                "reason": decision.reason,
                "undecided": list(decision.undecided),
            },
            model_version=f"{model_name}/{version}",
        )
        if not decision.promote:  # alert people (webhook, MLOPS_ALERT_WEBHOOK_URL); never fails the gate
            from mlops.governance import alerts

            alerts.send("gate_rejected", f"{model_name}/{version}", decision.reason)
        # Not move_alias: its promoted_at/replaced_by history is the champion's, which rollback follows.
        previous = store.point_alias(model_name, CHALLENGER, version)
        if str(previous) == str(version):  # a --cache re-run re-deciding the same version: nothing moved
            return
        run.audit(
            "alias.moved",
            f"{model_name}/{version}",
            {"alias": CHALLENGER, "from": previous, "to": version, "decision": decision.decision},
            model_version=f"{model_name}/{version}",
        )
