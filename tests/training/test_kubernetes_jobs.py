"""The TrainJob the launcher creates: shape, placement, queue, and schema-valid."""

from __future__ import annotations

from typing import Any

import pytest

from cli.manifests import validate
from training.kubernetes_config import KubernetesJobSettings, plan
from training.kubernetes_jobs import trainjob

SETTINGS = KubernetesJobSettings(
    namespace="team-risk",
    staging_uri="s3://mlops/jobs/train-1",
    workers=3,
    gpus_per_worker=2,
    gpu_resource="nvidia.com/mig-1g.10gb",
    gpu_type="NVIDIA-A100-SXM4-80GB",
    region="eu-west-1",
    allowed_regions="eu-west-1",
    priority_class="mlops-production-training",
    time_limit_hours=0.5,
)
PLAN = plan(SETTINGS, nproc=6)


def pod_patch(body: dict[str, Any]) -> dict[str, Any]:
    (patch,) = body["spec"]["runtimePatches"]
    (job,) = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    assert job["name"] == "node"
    template: dict[str, Any] = job["template"]["spec"]["template"]
    return template


def test_the_trainjob_validates_against_its_crd_schema() -> None:
    body = trainjob(PLAN, "train-abc", "ghcr.io/mlops-platform/mlops:0.1.0")
    assert list(validate([body], "launcher")) == []
    labels = body["metadata"]["labels"]
    assert labels["kueue.x-k8s.io/queue-name"] == "training"
    assert labels["kueue.x-k8s.io/priority-class"] == "mlops-production-training"
    assert body["metadata"]["namespace"] == "team-risk"


def test_trainjob_shape_resources_and_placement() -> None:
    body = trainjob(PLAN, "train-abc", "img:1")
    spec = body["spec"]
    assert spec["runtimeRef"] == {  # production priority: the runtime whose pods carry it
        "name": "mlops-torch-distributed-production",
        "apiGroup": "trainer.kubeflow.org",
        "kind": "ClusterTrainingRuntime",
    }
    assert spec["activeDeadlineSeconds"] == 1800
    trainer = spec["trainer"]
    assert (trainer["numNodes"], trainer["numProcPerNode"], trainer["image"]) == (3, 2, "img:1")
    assert trainer["command"] == ["torchrun", "-m", "training.cluster_worker", "s3://mlops/jobs/train-1"]
    assert trainer["resourcesPerNode"]["limits"]["nvidia.com/mig-1g.10gb"] == "2"
    assert trainer["resourcesPerNode"]["requests"] == {
        "cpu": "2",
        "memory": "8Gi",
        "nvidia.com/mig-1g.10gb": "2",
    }
    # Limits always beside requests, equal: no LimitRange default can land below a request.
    assert trainer["resourcesPerNode"]["limits"] == trainer["resourcesPerNode"]["requests"]
    pod = pod_patch(body)
    assert pod["metadata"]["labels"] == {
        "mlops.platform/job": "train-abc",
        "mlops.platform/workload": "training",
    }
    assert pod["spec"]["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}
    assert pod["spec"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    ]
    (term,) = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert term["matchExpressions"] == [
        {"key": "topology.kubernetes.io/region", "operator": "In", "values": ["eu-west-1"]}
    ]
    secrets = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in trainer["env"] if "valueFrom" in e}
    assert secrets["AWS_SECRET_ACCESS_KEY"]["name"] == "mlops-tracking"
    assert not any("value" in e and "SECRET" in e["name"] for e in trainer["env"])


@pytest.mark.parametrize(
    "priority, runtime",
    [
        ("mlops-experiment", "mlops-torch-distributed"),
        ("mlops-production-training", "mlops-torch-distributed-production"),
    ],
)
def test_trainjob_runs_on_the_runtime_carrying_its_pod_priority(priority: str, runtime: str) -> None:
    import yaml

    from cli.manifests import MANIFESTS_DIR

    checked = plan(SETTINGS.model_copy(update={"priority_class": priority}), nproc=6)
    assert trainjob(checked, "t", "img:1")["spec"]["runtimeRef"]["name"] == runtime
    runtimes = {
        doc["metadata"]["name"]: doc
        for doc in yaml.safe_load_all((MANIFESTS_DIR / "base/platform/trainingruntime.yaml").read_text())
    }
    pod = runtimes[runtime]["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    assert pod["spec"]["priorityClassName"] == priority


def test_single_cpu_worker_is_one_node_with_no_gpu_placement() -> None:
    cpu = plan(KubernetesJobSettings(namespace="team-dev", staging_uri="/shared/jobs"), nproc=1)
    body = trainjob(cpu, "train-cpu", "img:1")
    trainer = body["spec"]["trainer"]
    assert (trainer["numNodes"], trainer["numProcPerNode"]) == (1, 1)
    pod = pod_patch(body)["spec"]
    assert "tolerations" not in pod and "affinity" not in pod and "nodeSelector" not in pod
    assert trainer["resourcesPerNode"]["requests"] == {"cpu": "2", "memory": "8Gi"}
    assert trainer["resourcesPerNode"]["limits"] == {"cpu": "2", "memory": "8Gi"}


def test_pods_get_the_tasks_endpoints_and_storage_policy_but_no_secret(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MLFLOW_S3_ENDPOINT_URL", "http://s3.mlops-system:8080")
    monkeypatch.setenv("MLOPS_S3_SSE", "aws:kms")
    monkeypatch.setenv("MLOPS_S3_SSE_KMS_KEY_ID", "key-1")
    monkeypatch.setenv("MLOPS_S3_ALLOWED_REGIONS", "eu-west-1")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-for-pods")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://mlflow.mlops-system:5000")
    env = {e["name"]: e.get("value") for e in trainjob(PLAN, "train-abc", "img:1")["spec"]["trainer"]["env"]}
    assert env["MLFLOW_S3_ENDPOINT_URL"] == "http://s3.mlops-system:8080"
    assert "MLFLOW_TRACKING_URI" not in env  # tracking travels one way: in the staged job's logger
    assert (env["MLOPS_S3_SSE"], env["MLOPS_S3_SSE_KMS_KEY_ID"]) == ("aws:kms", "key-1")
    assert env["MLOPS_S3_ALLOWED_REGIONS"] == "eu-west-1"
    assert env["AWS_SECRET_ACCESS_KEY"] is None  # from the Secret, never the task's value
