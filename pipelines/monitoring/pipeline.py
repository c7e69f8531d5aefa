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
from pipelines.signature import Parameters, settings_pipeline

PIPELINE_NAME = "monitoring"
DEFAULTS = (WindowSettings(), DriftSettings(), RetrainSettings(), TrackingSettings(experiment=PIPELINE_NAME))
DESCRIPTION = (
    "Check a window of the request log for drift against the model's reference profile; retrain if drifted."
)


@settings_pipeline(
    PIPELINE_NAME, DESCRIPTION, DEFAULTS, returns=(str, "The check's decision: retrain or none.")
)
def monitoring_pipeline(parameters: Parameters) -> Any:
    tracking = parameters.tracking()
    check = check_drift(
        window=parameters.of(WindowSettings),
        drift=parameters.of(DriftSettings),
        **parameters.unpacked(DriftSettings),
        audit_workspace=parameters["workspace"],
        **tracking,
    )
    # The condition uses the single return value: kfp.local cannot resolve named outputs here.
    with dsl.If(check.outputs["Output"] == "retrain", name="drifted"):
        trigger_retraining(
            model_name=parameters["model_name"],
            check_run_id=check.outputs["run_id"],
            reasons=check.outputs["reasons"],
            retrain=parameters.of(RetrainSettings),
            **parameters.unpacked(RetrainSettings),
            **tracking,
        )
    return check.outputs["Output"]
