"""KFP wrapper for :mod:`components.retrain_trigger.retraining`."""

from kfp import dsl

from mlops.images import PLATFORM_IMAGE


@dsl.component(base_image=PLATFORM_IMAGE, install_kfp_package=False)
def trigger_retraining(
    model_name: str,
    check_run_id: str,
    reasons: str,
    retrain: dict,
    retrain_workspace: str,
    tracking: dict,
    pipeline_run_id: str,
) -> str:
    """Starts a retraining (local run or KFP run) unless within the cooldown; returns triggered or cooldown.

    ``retrain`` is that section; ``retrain_workspace`` its per-run setting ``retrain.workspace``.
    """
    from components.retrain_trigger.config import RetrainSettings
    from components.retrain_trigger.retraining import maybe_trigger
    from mlops.settings import from_section
    from mlops.tracking.store import TrackingStore

    settings = from_section(RetrainSettings, retrain, workspace=retrain_workspace)
    store = TrackingStore.for_task(tracking, pipeline_run_id)
    outcome = maybe_trigger(settings, model_name, store, check_run_id, reasons)
    print(f"{outcome.status}: {outcome.reason}")
    return outcome.status
