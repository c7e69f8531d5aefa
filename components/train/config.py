"""Settings of the train step that are not the training run's own (where its checkpoints go)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class TrainTaskSettings(BaseModel):
    """Where the train task keeps what survives a restart."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    checkpoint_dir: str = Field(
        default="",
        description="Directory for per-epoch checkpoints; a restarted task resumes from it. "
        "Empty: inside the task's output.",
    )
