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

from collections.abc import Sequence
from typing import TYPE_CHECKING

from components.promotion_gate.core import PROMOTE, REJECT, Decision
from components.register.core import TAG_PREFIX

if TYPE_CHECKING:
    from components.common.tracking import TrackingContext

OVERALL = "overall"


def combine(decisions: Sequence[Decision]) -> Decision:
    """``promote`` iff every decision is ``promote``; the reason names each rejecting gate."""
    if not decisions:
        raise ValueError("combine needs at least one gate decision")
    unknown = [d for d in decisions if d.decision not in (PROMOTE, REJECT)]
    if unknown:
        raise ValueError(
            f"gate(s) {[d.gate for d in unknown]} returned {[d.decision for d in unknown]}; "
            f"expected {PROMOTE!r} or {REJECT!r}"
        )
    rejected = [d for d in decisions if not d.promote]
    if rejected:
        return Decision(OVERALL, REJECT, "; ".join(f"{d.gate} gate: {d.reason}" for d in rejected), {})
    return Decision(OVERALL, PROMOTE, "all gates passed: " + ", ".join(d.gate for d in decisions), {})


def record_overall(decision: Decision, model_name: str, version: str, context: TrackingContext) -> None:
    import mlflow

    from components.common.tracking import task_run

    with task_run(context, f"gate_{OVERALL}"):
        client = mlflow.MlflowClient()
        client.set_model_version_tag(model_name, version, f"{TAG_PREFIX}decision", decision.decision)
        client.set_model_version_tag(model_name, version, f"{TAG_PREFIX}reason", decision.reason[:4000])
        mlflow.set_tags({"mlops.decision": decision.decision, "mlops.model_version": version})
