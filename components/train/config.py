"""Settings of the train step that are not the training run's own (where its checkpoints go)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from mlops.settings import SETTINGS_CONFIG


class TrainTaskSettings(BaseModel):
    """Where the train task keeps what survives a restart."""

    model_config = SETTINGS_CONFIG

    checkpoint_dir: str = Field(default="")
    """Directory for per-epoch checkpoints; a restarted task resumes from it. Empty: inside the task's output."""
