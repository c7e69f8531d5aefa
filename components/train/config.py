"""Settings of the train step that are not the training run's own (where its checkpoints go)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from mlops.settings import SETTINGS_CONFIG
from training.kubernetes_config import KubernetesJobSettings


class TrainTaskSettings(BaseModel):
    """Where the train task keeps what survives a restart."""

    model_config = SETTINGS_CONFIG

    launcher: Literal["local", "trainjob", "pytorchjob"] = Field(default="local")
    """Where the training ranks run: local = nproc processes inside the task; trainjob = a Kubeflow Trainer v2 TrainJob; pytorchjob = a Training Operator PyTorchJob (both: the cluster settings below, Kueue-queued)."""
    checkpoint_dir: str = Field(default="")
    """Directory for per-epoch checkpoints; a restarted task resumes from it. Empty: inside the task's output."""
    cluster: KubernetesJobSettings = Field(default_factory=KubernetesJobSettings)
    """The Kubernetes job of the trainjob and pytorchjob launchers (workers, GPUs, region, queue, budget)."""
