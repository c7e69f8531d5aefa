"""Settings of a training job on Kubernetes, and the checks that run before anything is created.

One :class:`KubernetesJobSettings` describes the Kubeflow Trainer v2 ``TrainJob`` the
Kubernetes launcher submits: how many worker pods, GPUs per pod and of which kind, where
it may run (data residency), which Kueue queue and priority, and how long it may take.
:func:`plan` checks all of it against the training config and refuses, with the setting to
change, before any object exists on the cluster or in the staging store: a region outside
``allowed_regions``, an estimate of GPU-hours over ``gpu_hours_budget``, or a rank count
that does not match ``nproc``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from mlops.settings import SETTINGS_CONFIG

QUANTITY = r"^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$"
REGION_LABEL = "topology.kubernetes.io/region"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"


class ClusterPolicyError(ValueError):
    """A job the platform's policy (residency, budget, shape) refuses; nothing was created."""


class KubernetesJobSettings(BaseModel):
    """Shape, placement and limits of a training job run by a Kubernetes launcher."""

    model_config = SETTINGS_CONFIG

    namespace: str = Field(default="", pattern=r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$", max_length=63)
    """Namespace the training job is created in. Empty: the namespace of the pod the train task runs in."""
    workers: int = Field(default=1, ge=1, le=1024)
    """Worker pods (nodes) of the job; ranks = workers x max(1, gpus_per_worker) and must equal nproc."""
    gpus_per_worker: int = Field(default=0, ge=0, le=16)
    """Accelerators per worker pod, one rank each; 0 = one CPU rank per pod."""
    gpu_resource: str = Field(default="nvidia.com/gpu", pattern=r"^[a-z0-9.-]+/[a-zA-Z0-9._-]+$")
    """Extended resource the GPUs are requested as: nvidia.com/gpu, or a MIG slice such as nvidia.com/mig-1g.10gb."""
    gpu_type: str = Field(default="", pattern=r"^[A-Za-z0-9._-]*$")
    """GPU model the pods must run on (node label nvidia.com/gpu.product, e.g. NVIDIA-H100-80GB-HBM3). Empty: any."""
    cpu_per_worker: str = Field(default="2", pattern=QUANTITY)
    """CPU request and limit of each worker pod (a Kubernetes quantity)."""
    memory_per_worker: str = Field(default="8Gi", pattern=QUANTITY)
    """Memory request and limit of each worker pod (a Kubernetes quantity)."""
    region: str = Field(default="", pattern=r"^[a-z0-9-]*$")
    """Region the pods must run in (node label topology.kubernetes.io/region). Empty: no region affinity, allowed only when allowed_regions is empty."""
    allowed_regions: str = Field(default="", pattern=r"^[a-z0-9-]*(,[a-z0-9-]+)*$")
    """Data residency: comma-separated regions training may run in; a region outside is refused before submission. Empty: no restriction."""
    kueue_queue: str = Field(default="training", min_length=1)
    """Kueue LocalQueue of the namespace the job is submitted to (label kueue.x-k8s.io/queue-name)."""
    priority_class: Literal["mlops-experiment", "mlops-production-training"] = Field(
        default="mlops-experiment"
    )
    """Priority of the job in Kueue and the scheduler: production retraining ranks above experiments."""
    trainer_runtime: str = Field(default="mlops-torch-distributed", min_length=1)
    """ClusterTrainingRuntime a TrainJob runs on: the platform's (infra/k8s/base/platform), which restarts lost pods from the last checkpoint; production_training jobs run on this name + "-production" (the runtime carries the pods' priority class)."""
    training_image: str = Field(default="")
    """Image of the training pods. Empty: the platform image (mlops.images.PLATFORM_IMAGE)."""
    time_limit_hours: float = Field(default=2.0, gt=0, le=720)
    """Longest the job may run once started; the cluster stops it then (activeDeadlineSeconds)."""
    queue_timeout_hours: float = Field(default=24.0, gt=0)
    """Longest the launcher waits for the job to start (Kueue admission, scheduling) before giving up."""
    gpu_hours_budget: float = Field(default=64.0, ge=0)
    """Budget gate: most GPU-hours (workers x gpus_per_worker x time_limit_hours) one job may reserve."""
    staging_uri: str = Field(default="")
    """Where the job's input and rank 0's result travel between the task and the pods (s3://bucket/prefix, or a path every pod mounts)."""
    poll_interval_s: float = Field(default=5.0, gt=0, le=300)
    """Seconds between status checks while waiting for the job."""
    keep_job: bool = Field(default=False)
    """Leave the finished job (and its pods) on the cluster instead of deleting it."""
    metrics_port: int = Field(default=9090, ge=1024, le=65535)
    """Port rank 0 serves mlops_training_* Prometheus metrics on (the PodMonitor scrapes it)."""

    @field_validator("staging_uri")
    @classmethod
    def _no_trailing_slash(cls, value: str) -> str:
        return value.rstrip("/")

    def regions(self) -> list[str]:
        """``allowed_regions`` as a list (empty: no restriction)."""
        return [r for r in self.allowed_regions.split(",") if r]

    def ranks_per_worker(self) -> int:
        return max(1, self.gpus_per_worker)

    def gpu_hours(self) -> float:
        """The most GPU-hours the job can use: every GPU held for the whole time limit."""
        return self.workers * self.gpus_per_worker * self.time_limit_hours

    def deadline_seconds(self) -> int:
        return max(1, math.ceil(self.time_limit_hours * 3600))


@dataclass(frozen=True)
class JobPlan:
    """A job that passed the checks: what the launcher creates."""

    settings: KubernetesJobSettings
    namespace: str
    world_size: int


def check_residency(settings: KubernetesJobSettings) -> None:
    """Refuse a region outside ``allowed_regions`` (and no region when some are required)."""
    allowed = settings.regions()
    if not allowed:
        return
    if not settings.region:
        raise ClusterPolicyError(
            f"region is empty but allowed_regions={settings.allowed_regions!r} restricts where training may run; "
            f"set region to one of {', '.join(allowed)}"
        )
    if settings.region not in allowed:
        raise ClusterPolicyError(
            f"region {settings.region!r} is outside allowed_regions ({', '.join(allowed)}): the data may not be "
            f"processed there; set region to one of them (or change allowed_regions, if policy permits)"
        )


def check_budget(settings: KubernetesJobSettings) -> None:
    """Refuse a job whose GPU-hour estimate exceeds ``gpu_hours_budget``, saying by how much."""
    estimate = settings.gpu_hours()
    if estimate > settings.gpu_hours_budget:
        over = estimate - settings.gpu_hours_budget
        raise ClusterPolicyError(
            f"estimated {estimate:g} GPU-hours (workers={settings.workers} x gpus_per_worker="
            f"{settings.gpus_per_worker} x time_limit_hours={settings.time_limit_hours:g}) exceeds "
            f"gpu_hours_budget={settings.gpu_hours_budget:g} by {over:g} GPU-hours; lower workers, "
            "gpus_per_worker or time_limit_hours"
        )


def check_shape(settings: KubernetesJobSettings, nproc: int) -> int:
    """The job's world size, which must be the training config's ``nproc``."""
    world = settings.workers * settings.ranks_per_worker()
    if world != nproc:
        raise ClusterPolicyError(
            f"nproc={nproc} but the job runs workers={settings.workers} x {settings.ranks_per_worker()} rank(s) "
            f"per worker (gpus_per_worker={settings.gpus_per_worker}) = {world} ranks; set nproc={world} or "
            "change workers/gpus_per_worker"
        )
    return world


def current_namespace(path: str = "/var/run/secrets/kubernetes.io/serviceaccount/namespace") -> str:
    """The namespace of the pod this runs in, or a :class:`ClusterPolicyError` outside a pod."""
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError:
        raise ClusterPolicyError(
            "namespace is empty and this process is not in a Kubernetes pod; set namespace to the "
            "team namespace the job should run in"
        ) from None


def check_policy(settings: KubernetesJobSettings, nproc: int) -> int:
    """Residency, budget and shape checks (no cluster needed); the job's world size."""
    check_residency(settings)
    check_budget(settings)
    world = check_shape(settings, nproc)
    if not settings.staging_uri:
        raise ClusterPolicyError(
            "staging_uri is empty: the training pods need a place to read the job from and write the result to; "
            "set it to an s3://bucket/prefix they can reach"
        )
    if settings.gpus_per_worker == 0 and settings.gpu_type:
        raise ClusterPolicyError(
            f"gpu_type={settings.gpu_type!r} with gpus_per_worker=0 would pin CPU ranks to GPU nodes; "
            "set gpus_per_worker or clear gpu_type"
        )
    return world


def plan(settings: KubernetesJobSettings, nproc: int) -> JobPlan:
    """Every check, in order, before anything is created; the plan the launcher submits."""
    world = check_policy(settings, nproc)
    namespace = settings.namespace or current_namespace()
    if not re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", namespace):
        raise ClusterPolicyError(f"namespace {namespace!r} is not a valid Kubernetes namespace name")
    return JobPlan(settings=settings, namespace=namespace, world_size=world)
