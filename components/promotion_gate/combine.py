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
from mlops.vocabulary import CHALLENGER, DECISION_TAG, MODEL_VERSION_TAG, REASON_TAG, clip

if TYPE_CHECKING:
    from mlops.tracking.context import TrackingContext

__all__ = ["combine", "record_overall"]


def record_overall(decision: Decision, model_name: str, version: str, context: TrackingContext) -> None:
    """Tag the verdict on the version, then make it the ``challenger``: the alias moves only once
    every gate has decided (promote or reject), so a run whose gate crashed leaves none behind."""
    import mlflow

    from mlops.governance.audit import record_in_run
    from mlops.tracking.context import task_run

    with task_run(context, f"gate_{OVERALL}"):
        client = mlflow.MlflowClient()
        client.set_model_version_tag(model_name, version, DECISION_TAG, decision.decision)
        client.set_model_version_tag(model_name, version, REASON_TAG, clip(decision.reason))
        mlflow.set_tags({DECISION_TAG: decision.decision, MODEL_VERSION_TAG: version})
        record_in_run(
            "gate.decided",
            f"{model_name}/{version}",
            {"gate": OVERALL, "decision": decision.decision, "reason": decision.reason},
            pipeline_run_id=context.pipeline_run_id,
            model_version=f"{model_name}/{version}",
        )
        try:
            previous: str | None = str(client.get_model_version_by_alias(model_name, CHALLENGER).version)
        except mlflow.exceptions.MlflowException:
            previous = None
        # Not move_alias: its promoted_at/replaced_by history is the champion's, which rollback follows.
        client.set_registered_model_alias(model_name, CHALLENGER, version)
        record_in_run(
            "alias.moved",
            f"{model_name}/{version}",
            {"alias": CHALLENGER, "from": previous, "to": version, "decision": decision.decision},
            pipeline_run_id=context.pipeline_run_id,
            model_version=f"{model_name}/{version}",
        )
