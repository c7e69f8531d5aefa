"""The canary stage's logic: run one rollout of a gated version on a server, return how it ended.

Plain code over :mod:`delivery.rollout` (tested without KFP); :mod:`components.canary.component`
only wraps it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from delivery.rollout.config import RolloutConfig
from delivery.rollout.controller import RolloutController
from delivery.rollout.registry_writes import RolloutRegistry
from delivery.rollout.state import RolloutState
from delivery.targets.local import LocalServerTarget
from mlops.governance.audit import AUDIT_URI_ENV
from mlops.tracking.store import TrackingStore


def audit_workspace(tracking_uri: str) -> Path | None:
    """Where the audit trail is: ``MLOPS_AUDIT_URI`` (None here), else the workspace of a SQLite store."""
    if os.environ.get(AUDIT_URI_ENV):
        return None
    if tracking_uri.startswith("sqlite:///"):
        return Path(tracking_uri.removeprefix("sqlite:///")).parent
    raise ValueError(
        f"the canary stage records every step in the audit trail, but the tracking store {tracking_uri} has no "
        f"workspace; set {AUDIT_URI_ENV} (e.g. s3://bucket/audit.jsonl) in the task's environment"
    )


def run_rollout(
    model_name: str, version: str, server_url: str, config: RolloutConfig, store: TrackingStore, report: Path
) -> RolloutState:
    """Roll ``version`` out against the champion on ``server_url``; write the final state to ``report``.

    The target's alias moves and the rollout's verdict go through ``store`` (one client for both)."""
    target = LocalServerTarget(server_url, store, model_name)
    controller = RolloutController(
        target, RolloutRegistry(store, model_name), audit_workspace(store.tracking_uri)
    )
    state = controller.run(controller.start(config, version))
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(json.dumps(_summary(state), indent=2))
    return state


def _summary(state: RolloutState) -> dict[str, Any]:
    return {**state.model_dump(mode="json"), "stages": list(state.config.stages)}
