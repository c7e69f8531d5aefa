"""KFP wrapper for :mod:`components.canary.canary`."""

from kfp import dsl
from kfp.dsl import Artifact, Output

from mlops.images import PLATFORM_IMAGE


@dsl.component(base_image=PLATFORM_IMAGE, install_kfp_package=False)
def canary_rollout(
    model_name: str,
    version: str,
    canary_server_url: str,
    rollout: dict,
    tracking: dict,
    pipeline_run_id: str,
    report: Output[Artifact],
) -> str:
    """Rolls the gated version out (shadow, canary steps) and returns ``promoted`` or ``rolled_back``."""
    from pathlib import Path

    from components.canary.canary import run_rollout
    from delivery.rollout.config import RolloutConfig
    from mlops.settings import from_flat
    from mlops.tracking.context import TrackingContext

    config = from_flat(RolloutConfig, rollout)
    context = TrackingContext.from_dict(tracking, pipeline_run_id)
    state = run_rollout(
        model_name, version, canary_server_url, config, context.tracking_uri, Path(report.path)
    )
    print(f"rollout of {model_name} version {version}: {state.phase} ({state.reason})")
    return state.phase
