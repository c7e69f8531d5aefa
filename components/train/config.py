"""Settings of the train step that are not the training run's own (where its checkpoints go)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, Field

from mlops.settings import SETTINGS_CONFIG
from training.kubernetes_config import KubernetesJobSettings


class TrainTaskSettings(BaseModel):
    """Where the train task keeps what survives a restart."""

    model_config = SETTINGS_CONFIG
    section: ClassVar[str] = "train_task"

    launcher: Literal["local", "trainjob", "pytorchjob"] = Field(default="local")
    """Where the training ranks run: local = nproc processes inside the task; trainjob = a Kubeflow Trainer v2 TrainJob; pytorchjob = a Training Operator PyTorchJob (both: the cluster settings below, Kueue-queued)."""
    checkpoint_dir: str = Field(default="")
    """Directory for per-epoch checkpoints; a restarted task resumes from it. Empty: inside the task's output."""
    cpu_request: str = Field(default="1", pattern=r"^[0-9]+(\.[0-9]+)?m?$")
    """CPU request of the train task's own pod on a KFP cluster (with launcher=local the ranks run in it)."""
    memory_request: str = Field(default="4Gi", pattern=r"^[0-9]+(\.[0-9]+)?(k|M|G|T|Ki|Mi|Gi|Ti)?$")
    """Memory request of the train task's own pod on a KFP cluster."""
    accelerator_type: str = Field(default="nvidia.com/gpu", min_length=1)
    """Accelerator resource of the train task's own pod (used when accelerator_limit > 0, i.e. launcher=local on GPUs)."""
    accelerator_limit: int = Field(default=0, ge=0, le=16)
    """Accelerators of the train task's own pod; 0 with the Kubernetes launchers, whose job pods hold the GPUs."""
    cluster: KubernetesJobSettings = Field(default_factory=KubernetesJobSettings)
    """The Kubernetes job of the trainjob and pytorchjob launchers (workers, GPUs, region, queue, budget)."""
