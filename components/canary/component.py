"""KFP wrapper for :mod:`components.canary.rollout_run`."""

from kfp import dsl
from kfp.dsl import Artifact, Output

from mlops.images import PLATFORM_IMAGE


@dsl.component(base_image=PLATFORM_IMAGE, install_kfp_package=False)
def canary_rollout(
    model_name: str,
    version: str,
    rollout: dict,
    rollout_canary: bool,
    tracking: dict,
    pipeline_run_id: str,
    report: Output[Artifact],
) -> str:
    """Rolls the gated version out (shadow, canary steps) and returns ``promoted`` or ``rolled_back``.

    ``rollout`` is that section (:class:`~components.canary.config.CanarySettings`: the rollout's
    settings and the server) and ``rollout_canary`` its per-run switch ``rollout.canary``.
    """
    from pathlib import Path

    from components.canary.config import CanarySettings
    from components.canary.rollout_run import run_rollout
    from mlops.settings import from_section
    from mlops.tracking.store import TrackingStore

    settings = from_section(CanarySettings, rollout, canary=rollout_canary)
    if not settings.canary:
        raise ValueError("rollout.canary is off: this version is promoted directly, not rolled out")
    store = TrackingStore.for_task(tracking, pipeline_run_id)
    state = run_rollout(
        model_name, version, settings.server_url, settings.rollout(), store, Path(report.path)
    )
    print(f"rollout of {model_name} version {version}: {state.phase} ({state.reason})")
    return state.phase
