"""A rollout's state: where it is in its plan, what it has seen, and where that is kept between commands."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from delivery.rollout.config import RolloutConfig

Phase = Literal["running", "promoted", "rolled_back"]
STATE_DIR = "rollouts"
"""Workspace subdirectory holding ``<model>.json``, the state of the model's latest rollout."""


def now() -> str:
    return datetime.now(UTC).isoformat()


class RolloutState(BaseModel):
    """One rollout of ``challenger`` against ``champion``; replaced (never mutated) at every step."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model_name: str
    champion: str
    challenger: str
    config: RolloutConfig
    target: str = Field(description="Where it runs (the target's describe()).")
    stage: int = Field(default=0, description="Index into config.stages.")
    passed: int = Field(default=0, description="Passing intervals in the current stage.")
    failures: int = Field(default=0, description="Failed intervals over the whole rollout.")
    waiting: int = Field(default=0, description="Intervals in a row with too little traffic.")
    intervals: int = Field(default=0, description="Intervals analysed so far.")
    phase: Phase = "running"
    reason: str = Field(default="", description="Why the rollout ended (or the last interval's verdict).")
    started_at: str = Field(default_factory=now)
    updated_at: str = Field(default_factory=now)

    @property
    def stage_name(self) -> str:
        """``shadow`` or the canary percentage, as text."""
        return self.config.stages[min(self.stage, len(self.config.stages) - 1)]

    @property
    def done(self) -> bool:
        return self.phase != "running"

    def advance(self, **changes: object) -> RolloutState:
        return self.model_copy(update={**changes, "updated_at": now()})


class StateStore:
    """Keeps each model's latest rollout state as JSON under ``<workspace>/rollouts/``."""

    def __init__(self, workspace_root: Path):
        self.directory = Path(workspace_root) / STATE_DIR

    def path(self, model_name: str) -> Path:
        return self.directory / f"{model_name}.json"

    def save(self, state: RolloutState) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        staging = self.path(state.model_name).with_suffix(".tmp")
        staging.write_text(state.model_dump_json(indent=2))
        staging.replace(self.path(state.model_name))

    def load(self, model_name: str) -> RolloutState:
        path = self.path(model_name)
        if not path.is_file():
            raise ValueError(
                f"no rollout of {model_name!r} recorded in {self.directory}; start one with `mlops rollout start`"
            )
        return RolloutState.model_validate_json(path.read_text())
