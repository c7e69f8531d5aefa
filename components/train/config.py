"""Settings of the train step that are not the training run's own (where its checkpoints go)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from mlops.settings import SETTINGS_CONFIG


class TrainTaskSettings(BaseModel):
    """Where the train task keeps what survives a restart."""

    model_config = SETTINGS_CONFIG

    launcher: Literal["local"] = Field(default="local")
    """Where the training ranks run: local = nproc processes inside the task. Kubernetes launchers (Kubeflow TrainJob, PyTorchJob) plug in behind the same seam (training/launcher.py)."""
    checkpoint_dir: str = Field(default="")
    """Directory for per-epoch checkpoints; a restarted task resumes from it. Empty: inside the task's output."""
