"""The exact TrainJob the launcher submits, field by field: what the cluster receives is all there is.

``test_kubernetes_jobs.py`` checks the shapes against the CRD schemas and the main placement rules;
these pin every field of a small job (two one-GPU workers in one region): labels, environment in
order, the runtime patch and trainer, and the edges: when a variable is forwarded, when a toleration
or node selector appears, how nodes and ranks per node follow the workers and their GPUs.
"""

from __future__ import annotations

from typing import Any

import pytest

from mlops.storage_policy import StoragePolicy
from training.kubernetes_config import KubernetesJobSettings, plan
from training.kubernetes_jobs import FORWARDED_ENV, trainjob

NAME = "t1"
SETTINGS = KubernetesJobSettings(
    namespace="team-risk",
    staging_uri="s3://mlops/jobs/t1",
    workers=2,
    gpus_per_worker=1,
    region="eu-west-1",
    time_limit_hours=0.25,
)
COMMAND = ["torchrun", "-m", "training.cluster_worker", "s3://mlops/jobs/t1"]
POD_LABELS = {"mlops.platform/job": NAME, "mlops.platform/workload": "training"}
JOB_LABELS = {
    "kueue.x-k8s.io/queue-name": "training",
    "kueue.x-k8s.io/priority-class": "mlops-experiment",
    **POD_LABELS,
    "app.kubernetes.io/part-of": "mlops",
}
ENV = [
    {"name": "PYTHONUNBUFFERED", "value": "1"},
    {"name": "MLOPS_METRICS_PORT", "value": "9090"},
    {"name": "MLOPS_JOB_NAME", "value": NAME},
    {
        "name": "AWS_ACCESS_KEY_ID",
        "valueFrom": {
            "secretKeyRef": {"name": "mlops-tracking", "key": "aws-access-key-id", "optional": True}
        },
    },
    {
        "name": "AWS_SECRET_ACCESS_KEY",
        "valueFrom": {
            "secretKeyRef": {"name": "mlops-tracking", "key": "aws-secret-access-key", "optional": True}
        },
    },
]
ONE_GPU = {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "1"}
TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
REGION_AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": "topology.kubernetes.io/region", "operator": "In", "values": ["eu-west-1"]}
                    ]
                }
            ]
        }
    }
}


@pytest.fixture(autouse=True)
def _no_forwarded_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in (*FORWARDED_ENV, *(StoragePolicy.env_name(f) for f in StoragePolicy.model_fields)):
        monkeypatch.delenv(key, raising=False)


def _plan(**overrides: Any) -> Any:
    settings = SETTINGS.model_copy(update=overrides)
    return plan(settings, nproc=settings.workers * settings.ranks_per_worker())


def test_trainjob_is_exactly_the_job_asked_for() -> None:
    body = trainjob(_plan(), NAME, "img:1")
    pod_spec = {"tolerations": [TOLERATION], "affinity": REGION_AFFINITY}
    assert body == {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": NAME, "namespace": "team-risk", "labels": JOB_LABELS},
        "spec": {
            "runtimeRef": {
                "name": "mlops-torch-distributed",
                "apiGroup": "trainer.kubeflow.org",
                "kind": "ClusterTrainingRuntime",
            },
            "trainer": {
                "image": "img:1",
                "command": COMMAND,
                "env": ENV,
                "numNodes": 2,
                "numProcPerNode": 1,
                "resourcesPerNode": {"requests": ONE_GPU, "limits": ONE_GPU},
            },
            "runtimePatches": [
                {
                    "manager": "mlops.platform/kubernetes-launcher",
                    "trainingRuntimeSpec": {
                        "template": {
                            "spec": {
                                "replicatedJobs": [
                                    {
                                        "name": "node",
                                        "template": {
                                            "spec": {
                                                "template": {
                                                    "metadata": {"labels": POD_LABELS},
                                                    "spec": pod_spec,
                                                }
                                            }
                                        },
                                    }
                                ]
                            }
                        }
                    },
                }
            ],
            "activeDeadlineSeconds": 900,
        },
    }


def test_one_worker_with_gpus_is_one_node_running_a_rank_per_gpu() -> None:
    trainer = trainjob(_plan(workers=1, gpus_per_worker=4), NAME, "img:1")["spec"]["trainer"]
    assert (trainer["numNodes"], trainer["numProcPerNode"]) == (1, 4)
    assert trainer["resourcesPerNode"]["limits"]["nvidia.com/gpu"] == "4"


def test_gpus_without_a_gpu_type_tolerate_the_gpu_taint_but_pin_no_product() -> None:
    (patch,) = trainjob(_plan(), NAME, "img:1")["spec"]["runtimePatches"]
    (job,) = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    pod = job["template"]["spec"]["template"]["spec"]
    assert "nodeSelector" not in pod and pod["tolerations"] == [TOLERATION]


def test_a_cpu_job_without_region_patches_only_the_pod_labels() -> None:
    body = trainjob(_plan(gpus_per_worker=0, region=""), NAME, "img:1")
    (patch,) = body["spec"]["runtimePatches"]
    (job,) = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    assert job["template"]["spec"]["template"] == {"metadata": {"labels": POD_LABELS}, "spec": {}}
    assert body["spec"]["trainer"]["resourcesPerNode"] == {
        "requests": {"cpu": "2", "memory": "8Gi"},
        "limits": {"cpu": "2", "memory": "8Gi"},
    }


def test_only_set_variables_are_forwarded_after_the_job_s_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "")  # set but empty: the pod keeps its own default
    monkeypatch.setenv("MLOPS_S3_VERIFY_ENCRYPTION", "false")
    env = trainjob(_plan(metrics_port=9300), "t2", "img:1")["spec"]["trainer"]["env"]
    assert env[:5] == [
        {"name": "PYTHONUNBUFFERED", "value": "1"},
        {"name": "MLOPS_METRICS_PORT", "value": "9300"},
        {"name": "MLOPS_JOB_NAME", "value": "t2"},
        {"name": "AWS_DEFAULT_REGION", "value": "eu-west-1"},
        {"name": "MLOPS_S3_VERIFY_ENCRYPTION", "value": "false"},
    ]
    assert [e["name"] for e in env[5:]] == ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"]
