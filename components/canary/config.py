"""Settings of the training pipeline's ``canary`` stage (the rollout's own are ``RolloutConfig``'s)."""

from __future__ import annotations

from pydantic import BaseModel

from mlops.settings import SETTINGS_CONFIG


class CanarySettings(BaseModel):
    """Whether a version that passed the gates is rolled out progressively, and where."""

    model_config = SETTINGS_CONFIG

    canary: bool = False
    """Roll the gated version out through shadow and canary steps on a running server instead of
    promoting it at once (off by default: a local run has no server to roll out to)."""
    canary_server_url: str = "http://127.0.0.1:8080"
    """The `mlops serve` the rollout drives (its /v2/models/<name>/rollout route)."""
