"""The training pipeline's ``rollout`` section: the rollout's own settings, the canary switch and the server.

The rollout settings are :class:`delivery.rollout.config.RolloutConfig`'s (the same fields
``mlops rollout start`` takes as flags); the pipeline adds whether its gated version is rolled out
at all and on which server. One section, so a person finds everything about the rollout in one
place of the KFP form.
"""

from __future__ import annotations

from delivery.rollout.config import RolloutConfig


class CanarySettings(RolloutConfig):
    """Whether a version that passed the gates is rolled out progressively, where, and how."""

    canary: bool = False
    """Roll the gated version out through shadow and canary steps on a running server instead of
    promoting it at once (off by default: a local run has no server to roll out to)."""
    server_url: str = "http://127.0.0.1:8080"
    """The `mlops serve` the rollout drives (its /v2/models/<name>/rollout route)."""

    def rollout(self) -> RolloutConfig:
        """The rollout's own settings, as the controller takes them (without the switch and the server)."""
        return RolloutConfig.model_validate(self.model_dump(exclude={"canary", "server_url"}))
