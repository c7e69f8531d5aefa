"""The object the Kubernetes launcher creates: a Kubeflow Trainer v2 ``TrainJob``.

Its pods run the platform image starting ``torchrun -m training.cluster_worker
<staging_uri>``. torchrun reads the rendezvous from the ``PET_*`` environment the Trainer's
Torch runtime sets on every pod (number of nodes, this node's rank, master address and
port; ranks per node), starts one process per GPU (or one on CPU), and each process joins
the job's process group exactly as the local launcher's spawned ranks do. Pods are built
with the ``kubernetes`` client's typed models and carry the Kueue queue and priority labels,
region affinity (data residency), the GPU type's node selector and toleration, and
``mlops.platform/job=<name>`` so the launcher finds them among the JobSet's pods.

There is no Training Operator v1 ``PyTorchJob`` builder: Kubeflow replaced that line with
Trainer v2, and the cluster tier runs the real Trainer v2, JobSet and Kueue controllers, while
a PyTorchJob was only ever checked against a stand-in controller, an untested path to ship.
"""

from __future__ import annotations

import os
from typing import Any

from kubernetes import client

from mlops.storage_policy import StoragePolicy
from training.kubernetes_config import GPU_PRODUCT_LABEL, REGION_LABEL, JobPlan, KubernetesJobSettings

TRAINJOB_API = ("trainer.kubeflow.org", "v1alpha1", "trainjobs", "TrainJob")
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
JOB_LABEL = "mlops.platform/job"
WORKLOAD_LABEL = "mlops.platform/workload"
PATCH_MANAGER = "mlops.platform/kubernetes-launcher"
TRAINER_CONTAINER = "node"
FORWARDED_ENV = ("MLFLOW_S3_ENDPOINT_URL", "AWS_ENDPOINT_URL", "AWS_DEFAULT_REGION")
"""Non-secret settings of the task's environment the pods need too (the S3 endpoint and region);
the storage policy's (``MLOPS_S3_SSE`` …) go with them, so the pods' writes are governed like the task's.
Where to track is not among them: it travels one way, inside the staged job (the rank logger carries
the task's :class:`~mlops.tracking.store.TrackingStore`, explicit URIs and all)."""
CREDENTIALS_SECRET = "mlops-tracking"
"""Secret (keys aws-access-key-id, aws-secret-access-key) the pods read S3 credentials from, when it exists."""


def worker_command(staging_uri: str) -> list[str]:
    return ["torchrun", "-m", "training.cluster_worker", staging_uri]


def labels(plan: JobPlan, name: str) -> dict[str, str]:
    return {
        QUEUE_LABEL: plan.settings.kueue_queue,
        PRIORITY_LABEL: plan.settings.priority_class,
        JOB_LABEL: name,
        WORKLOAD_LABEL: "training",
        "app.kubernetes.io/part-of": "mlops",
    }


def environment(plan: JobPlan, name: str) -> list[client.V1EnvVar]:
    env = [
        client.V1EnvVar(name="PYTHONUNBUFFERED", value="1"),
        client.V1EnvVar(name="MLOPS_METRICS_PORT", value=str(plan.settings.metrics_port)),
        client.V1EnvVar(name="MLOPS_JOB_NAME", value=name),
    ]
    forwarded = FORWARDED_ENV + tuple(StoragePolicy.env_name(f) for f in StoragePolicy.model_fields)
    env += [client.V1EnvVar(name=key, value=os.environ[key]) for key in forwarded if os.environ.get(key)]
    for key, item in (
        ("AWS_ACCESS_KEY_ID", "aws-access-key-id"),
        ("AWS_SECRET_ACCESS_KEY", "aws-secret-access-key"),
    ):
        ref = client.V1SecretKeySelector(name=CREDENTIALS_SECRET, key=item, optional=True)
        env.append(client.V1EnvVar(name=key, value_from=client.V1EnvVarSource(secret_key_ref=ref)))
    return env


def resources(plan: JobPlan) -> client.V1ResourceRequirements:
    """Requests and limits, always both and equal: a namespace's LimitRange never fills in a default
    limit below the request (which the API server refuses), and the pods are Guaranteed QoS."""
    s = plan.settings
    requests: dict[str, str] = {"cpu": s.cpu_per_worker, "memory": s.memory_per_worker}
    limits: dict[str, str] = dict(requests)
    if s.gpus_per_worker:
        requests[s.gpu_resource] = limits[s.gpu_resource] = str(s.gpus_per_worker)
    return client.V1ResourceRequirements(requests=requests, limits=limits)


def placement(plan: JobPlan) -> tuple[dict[str, str], list[client.V1Toleration], client.V1Affinity | None]:
    """Node selector (GPU type), tolerations (GPU taint) and affinity (region) of every pod."""
    s = plan.settings
    selector = {GPU_PRODUCT_LABEL: s.gpu_type} if s.gpu_type else {}
    tolerations = (
        [client.V1Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule")]
        if s.gpus_per_worker
        else []
    )
    affinity = None
    if s.region:
        term = client.V1NodeSelectorTerm(
            match_expressions=[
                client.V1NodeSelectorRequirement(key=REGION_LABEL, operator="In", values=[s.region])
            ]
        )
        required = client.V1NodeSelector(node_selector_terms=[term])
        affinity = client.V1Affinity(
            node_affinity=client.V1NodeAffinity(required_during_scheduling_ignored_during_execution=required)
        )
    return selector, tolerations, affinity


def _plain(obj: Any) -> Any:
    return client.ApiClient().sanitize_for_serialization(obj)


def _metadata(plan: JobPlan, name: str, kind: str, api: tuple[str, str, str, str]) -> dict[str, Any]:
    return {
        "apiVersion": f"{api[0]}/{api[1]}",
        "kind": kind,
        "metadata": {"name": name, "namespace": plan.namespace, "labels": labels(plan, name)},
    }


PRODUCTION_RUNTIME_SUFFIX = "-production"
"""The runtime of ``mlops-production-training`` jobs is ``trainer_runtime`` + this (infra/k8s/base/platform)."""


def runtime_name(settings: KubernetesJobSettings) -> str:
    """The ClusterTrainingRuntime a TrainJob of this priority runs on: the runtime carries the pods'
    ``priorityClassName`` (a TrainJob's runtimePatches may not set it)."""
    if settings.priority_class == "mlops-production-training":
        return settings.trainer_runtime + PRODUCTION_RUNTIME_SUFFIX
    return settings.trainer_runtime


def trainjob(plan: JobPlan, name: str, image: str) -> dict[str, Any]:
    """A Kubeflow Trainer v2 TrainJob on the ``trainer_runtime`` ClusterTrainingRuntime."""
    s = plan.settings
    selector, tolerations, affinity = placement(plan)
    pod_spec = client.V1PodSpec(
        containers=[], node_selector=selector or None, tolerations=tolerations or None, affinity=affinity
    )
    pod_patch = {
        "metadata": {"labels": {JOB_LABEL: name, WORKLOAD_LABEL: "training"}},
        "spec": {k: v for k, v in _plain(pod_spec).items() if k != "containers"},
    }
    patch = {
        "manager": PATCH_MANAGER,
        "trainingRuntimeSpec": {
            "template": {
                "spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {"template": pod_patch}}}]}
            }
        },
    }
    trainer = {
        "image": image,
        "command": worker_command(s.staging_uri),
        "env": _plain(environment(plan, name)),
        "numNodes": s.workers,
        "numProcPerNode": s.ranks_per_worker(),
        "resourcesPerNode": _plain(resources(plan)),
    }
    body = _metadata(plan, name, TRAINJOB_API[3], TRAINJOB_API)
    body["spec"] = {
        "runtimeRef": {
            "name": runtime_name(s),
            "apiGroup": "trainer.kubeflow.org",
            "kind": "ClusterTrainingRuntime",
        },
        "trainer": trainer,
        "runtimePatches": [patch],
        "activeDeadlineSeconds": s.deadline_seconds(),
    }
    return body
