"""KFP wrappers for :mod:`components.promotion_gate.core`."""

from typing import NamedTuple

from kfp import dsl
from kfp.dsl import Artifact, Output

from components.common.images import PLATFORM_IMAGE


@dsl.component(base_image=PLATFORM_IMAGE, install_kfp_package=False)
def metrics_gate(
    model_name: str,
    version: str,
    test_auc: float,
    champion_auc: float,
    has_champion: bool,
    auc_floor: float,
    max_auc_regression: float,
    tracking_uri: str,
    experiment: str,
    pipeline_run_id: str,
    artifact_root: str,
    report: Output[Artifact],
) -> NamedTuple("GateOutputs", [("decision", str), ("reason", str)]):  # type: ignore[valid-type]
    """Decides promote/reject from test AUC vs floor and champion; records it on the version."""
    from collections import namedtuple
    from pathlib import Path

    from components.common.tracking import TrackingContext
    from components.promotion_gate.core import MetricsGatePolicy, decide, record

    policy = MetricsGatePolicy(auc_floor=auc_floor, max_auc_regression=max_auc_regression)
    decision = decide(policy, test_auc, champion_auc, has_champion)
    context = TrackingContext(tracking_uri, experiment, pipeline_run_id, artifact_root)
    record(decision, model_name, version, context, Path(report.path))
    print(f"gate {decision.gate}: {decision.decision} ({decision.reason})")
    GateOutputs = namedtuple("GateOutputs", ["decision", "reason"])
    return GateOutputs(decision.decision, decision.reason)


@dsl.component(base_image=PLATFORM_IMAGE, install_kfp_package=False)
def promote_to_champion(
    model_name: str,
    version: str,
    tracking_uri: str,
    experiment: str,
    pipeline_run_id: str,
    artifact_root: str,
) -> str:
    """Moves alias ``champion`` to the version; returns the replaced version or ''."""
    from components.common.tracking import TrackingContext
    from components.promotion_gate.core import promote

    context = TrackingContext(tracking_uri, experiment, pipeline_run_id, artifact_root)
    previous = promote(model_name, version, context)
    print(f"{model_name} version {version} is now champion (was {previous or 'none'})")
    return previous or ""
