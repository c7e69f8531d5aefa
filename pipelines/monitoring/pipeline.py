"""The monitoring pipeline: drift check of a request-log window → if drifted, trigger retraining.

Run it on demand (``mlops monitor --since … --until …``) or on a schedule (a KFP
recurring run, see README). A check that cannot run (empty window, a log of another
schema, a version without a reference profile) fails the pipeline and triggers nothing.
"""

from __future__ import annotations

from typing import Any

from kfp import dsl

from components.drift_monitor.component import check_drift
from components.drift_monitor.config import DriftSettings, WindowSettings
from components.retrain_trigger.component import trigger_retraining
from components.retrain_trigger.config import RetrainSettings
from mlops.tracking.context import TrackingSettings
from pipelines.signature import Parameters, PipelineForm

PIPELINE_NAME = "monitoring"
DEFAULTS = (WindowSettings(), DriftSettings(), RetrainSettings(), TrackingSettings(experiment=PIPELINE_NAME))
PER_RUN = ("window.model_name", "window.since", "window.until", "retrain.workspace")
"""The settings ``mlops monitor`` (or a recurring run) changes per check: plain parameters of the form."""
DESCRIPTION = (
    "Check a window of the request log for drift against the model's reference profile; retrain if drifted."
)
FORM = PipelineForm(
    PIPELINE_NAME,
    DESCRIPTION,
    DEFAULTS,
    per_run=PER_RUN,
    returns=(str, "The check's decision: retrain or none."),
)


@FORM.pipeline
def monitoring_pipeline(parameters: Parameters) -> Any:
    tracking = parameters.tracking()
    model_name = parameters.per_run("window.model_name")
    workspace = parameters.per_run("retrain.workspace")
    check = check_drift(
        window=parameters.section("window"),
        window_model_name=model_name,
        window_since=parameters.per_run("window.since"),
        window_until=parameters.per_run("window.until"),
        drift=parameters.section("drift"),
        audit_workspace=workspace,
        **tracking,
    )
    check.set_caching_options(False)  # the request log grows under the same URI: never reuse an old window
    # The condition uses the single return value: kfp.local cannot resolve named outputs here.
    with dsl.If(check.outputs["Output"] == "retrain", name="drifted"):
        trigger = trigger_retraining(
            model_name=model_name,
            check_run_id=check.outputs["run_id"],
            reasons=check.outputs["reasons"],
            retrain=parameters.section("retrain"),
            retrain_workspace=workspace,
            **tracking,
        )
        trigger.set_caching_options(False)  # it starts a retraining run: an act, not a result to reuse
    return check.outputs["Output"]
