"""Settings of the train step that are not the training run's own (where its checkpoints go)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field, field_validator

from mlops.settings import SETTINGS_CONFIG
from training.kubernetes_config import KubernetesJobSettings


class TrainTaskSettings(BaseModel):
    """Where the train task keeps what survives a restart."""

    model_config = SETTINGS_CONFIG
    section: ClassVar[str] = "train_task"

    launcher: Literal["local", "trainjob"] = Field(default="local")
    """Where the training ranks run: local = nproc processes inside the task; trainjob = a Kubeflow Trainer v2 TrainJob (the cluster settings below, Kueue-queued)."""
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
    """The TrainJob of the trainjob launcher (workers, GPUs, region, queue, budget)."""

    @field_validator("launcher", mode="before")
    @classmethod
    def _no_pytorchjob(cls, value: Any) -> Any:
        """The Training Operator v1 PyTorchJob launcher is gone: Kubeflow replaced that line with Trainer v2,
        and it was only ever checked against a stand-in controller, so a config still naming it is told
        the fix rather than shown the bare list of allowed values."""
        if value == "pytorchjob":
            raise ValueError(
                "launcher 'pytorchjob' (a Training Operator v1 PyTorchJob) is not supported: Kubeflow replaced "
                "the Training Operator with Trainer v2, and the platform runs cluster training as Trainer v2 "
                "TrainJobs only; use --set train_task.launcher=trainjob (the cluster needs Kubeflow Trainer v2, "
                "JobSet and Kueue) or launcher=local"
            )
        return value
