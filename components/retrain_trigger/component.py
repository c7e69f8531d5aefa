"""KFP wrapper for :mod:`components.retrain_trigger.retrain_trigger`."""

from kfp import dsl

from mlops.images import PLATFORM_IMAGE


@dsl.component(base_image=PLATFORM_IMAGE, install_kfp_package=False)
def trigger_retraining(
    model_name: str,
    check_run_id: str,
    reasons: str,
    retrain: dict,
    retrain_overrides: dict,
    tracking: dict,
    pipeline_run_id: str,
) -> str:
    """Starts a retraining (local run or KFP run) unless within the cooldown; returns triggered or cooldown."""
    from components.retrain_trigger.config import RetrainSettings
    from components.retrain_trigger.retrain_trigger import maybe_trigger
    from mlops.settings import from_flat
    from mlops.tracking.context import TrackingContext

    settings = from_flat(RetrainSettings, {**retrain, "retrain_overrides": retrain_overrides})
    context = TrackingContext.from_dict(tracking, pipeline_run_id)
    outcome = maybe_trigger(settings, model_name, context.tracking_uri, check_run_id, reasons)
    print(f"{outcome.status}: {outcome.reason}")
    return outcome.status
