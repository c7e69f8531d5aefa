"""The Kubernetes launcher end to end against a real kube-apiserver, the test playing the controller.

The launcher creates its TrainJob through the ``kubernetes`` client; the
stand-in controller (tests/support/k8s_controller.py) makes it queue, start, and then
succeed by really running the pod command (torchrun + training.cluster_worker), fail
with a reason, or hang past the time limit. Refusals (region, budget) leave nothing.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from kubernetes import client

from components.train.config import TrainTaskSettings
from components.train.training_task import launcher_for
from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
from mlops.governance.audit import read_events
from tests.services.kubernetes import KubeCluster
from tests.support.k8s_controller import FAILURE_REASON, JobController, install_crds
from training.config import ModelConfig, TrainConfig
from training.kubernetes_config import ClusterPolicyError, KubernetesJobSettings
from training.kubernetes_jobs import JOB_LABEL, TRAINJOB_API
from training.kubernetes_launcher import KubernetesLauncher, TrainingJobFailed, TrainingJobTimeout
from training.trainer import train

CONFIG = TrainConfig(
    epochs=2,
    batch_size=128,
    learning_rate=5e-3,
    model=ModelConfig(hidden_units=(16,), dropout=0.0),
    precision="fp32",
    device="cpu",
    patience=0,
    nproc=2,
)
_names = itertools.count()


QUEUES = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: launch-test}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: launch-test}
spec:
  namespaceSelector: {}
  resourceGroups:
    - coveredResources: [cpu, memory, nvidia.com/gpu]
      flavors:
        - name: launch-test
          resources:
            - {name: cpu, nominalQuota: "64"}
            - {name: memory, nominalQuota: 256Gi}
            - {name: nvidia.com/gpu, nominalQuota: "16"}
"""


@pytest.fixture(scope="module")
def cluster(kube_apiserver: KubeCluster) -> KubeCluster:
    install_crds(kube_apiserver)
    kube_apiserver.kubectl("apply", "-f", "-", stdin=QUEUES)
    return kube_apiserver


@pytest.fixture
def namespace(cluster: KubeCluster) -> str:
    """A namespace with the LocalQueue `training` the launcher checks its job against (no limits of its own)."""
    name = f"team-launch-{next(_names)}"
    cluster.kubectl("create", "namespace", name)
    queue = f"apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {{name: training, namespace: {name}}}\n"
    cluster.kubectl("apply", "-f", "-", stdin=queue + "spec: {clusterQueue: launch-test}\n")
    return name


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return generate(SampleDataConfig(rows=1200, seed=4))


def settings(namespace: str, staging: Path, **overrides: Any) -> KubernetesJobSettings:
    base: dict[str, Any] = {
        "namespace": namespace,
        "staging_uri": str(staging),
        "workers": 2,
        "region": "eu-west-1",
        "allowed_regions": "eu-west-1,eu-central-1",
        "poll_interval_s": 0.2,
    }
    return KubernetesJobSettings(**{**base, **overrides})


def jobs(cluster: KubeCluster, namespace: str) -> list[dict[str, Any]]:
    group, version, plural, _ = TRAINJOB_API
    api = client.CustomObjectsApi(cluster.api_client())
    items: list[dict[str, Any]] = api.list_namespaced_custom_object(group, version, namespace, plural)[
        "items"
    ]
    return [j for j in items if not j["metadata"].get("deletionTimestamp")]


def test_job_queues_runs_the_pod_code_and_returns_rank0s_result(
    cluster: KubeCluster,
    namespace: str,
    frame: pd.DataFrame,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MLOPS_AUDIT_URI", str(tmp_path / "audit.jsonl"))
    reports: list[str] = []
    launcher = KubernetesLauncher(
        settings(namespace, tmp_path / "stage"), cluster.api_client(), reports.append
    )
    with JobController(cluster.api_client(), namespace, "succeed", reports=reports) as controller:
        result = train(frame, SAMPLE_SCHEMA, CONFIG, tmp_path / "model", launcher=launcher)
    assert result.epochs_run == 2 and 0.5 < result.best_val_auc <= 1.0, controller.pod_output[-2000:]
    assert (tmp_path / "model").is_dir()
    state_lines = [r for r in reports if ": " in r and "created" not in r and " event from " not in r]
    states = [r.split(": ", 1)[1].split(" ")[0] for r in state_lines if not r.startswith("  ")]
    phases = [phase for phase, _ in itertools.groupby(states)]
    assert phases == ["queued", "pending", "running", "succeeded"], reports
    assert "queued (suspended, waiting for Kueue admission)" in " ".join(reports)
    assert "2 worker(s) x CPU, queue training, region eu-west-1" in reports[0]
    labels = controller.seen["metadata"]["labels"]
    assert labels["kueue.x-k8s.io/queue-name"] == "training"
    assert jobs(cluster, namespace) == [], "the finished job is deleted"
    assert reports[-1].endswith("deleted")
    created, finished = read_events()
    assert (created.action, finished.action) == ("training_job.created", "training_job.finished")
    assert created.subject == finished.subject == f"TrainJob/{namespace}/{labels[JOB_LABEL]}"
    assert (
        created.details["shape"].startswith("2 worker(s) x CPU")
        and finished.details["outcome"] == "succeeded"
    )


def test_failure_surfaces_the_reason_and_the_pods(
    cluster: KubeCluster,
    namespace: str,
    frame: pd.DataFrame,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MLOPS_AUDIT_URI", str(tmp_path / "audit.jsonl"))
    launcher = KubernetesLauncher(
        settings(namespace, tmp_path / "stage"), cluster.api_client(), lambda _: None
    )
    with (
        JobController(cluster.api_client(), namespace, "fail"),
        pytest.raises(
            TrainingJobFailed, match=rf"failed: {FAILURE_REASON}: rank 0 exited with code 1"
        ) as info,
    ):
        train(frame, SAMPLE_SCHEMA, CONFIG, tmp_path / "model", launcher=launcher)
    message = str(info.value)
    assert "-node-0 (Failed) ---" in message and "-node-1 (Failed) ---" in message
    assert "(empty log: the container wrote nothing, or never started on a node)" in message, (
        "no kubelet here"
    )
    assert jobs(cluster, namespace) == []
    assert not (tmp_path / "model").exists(), "a failed job leaves no model"
    finished = read_events()[-1]
    assert (finished.action, finished.details["outcome"]) == ("training_job.finished", "failed")
    assert FAILURE_REASON in finished.details["reason"]


def test_a_job_running_past_its_time_limit_is_stopped_and_deleted(
    cluster: KubeCluster, namespace: str, frame: pd.DataFrame, tmp_path: Path
) -> None:
    limited = settings(namespace, tmp_path / "stage", time_limit_hours=1 / 3600)
    launcher = KubernetesLauncher(limited, cluster.api_client(), lambda _: None)
    with (
        JobController(cluster.api_client(), namespace, "hang") as controller,
        pytest.raises(TrainingJobTimeout, match=r"still running after time_limit_hours=0.000277"),
    ):
        train(frame, SAMPLE_SCHEMA, CONFIG, tmp_path / "model", launcher=launcher)
    assert controller.seen["spec"]["activeDeadlineSeconds"] == 1, "the cluster enforces the same limit"
    assert jobs(cluster, namespace) == []


def test_a_job_never_admitted_times_out_in_the_queue(
    cluster: KubeCluster, namespace: str, frame: pd.DataFrame, tmp_path: Path
) -> None:
    waiting = settings(namespace, tmp_path / "stage", queue_timeout_hours=1 / 3600, keep_job=True)
    launcher = KubernetesLauncher(waiting, cluster.api_client(), lambda _: None)
    with pytest.raises(
        TrainingJobTimeout, match=r"did not start within queue_timeout_hours=.*check the queue 'training'"
    ):
        train(frame, SAMPLE_SCHEMA, CONFIG, tmp_path / "model", launcher=launcher)
    assert len(jobs(cluster, namespace)) == 1, "keep_job leaves it for inspection"


@pytest.mark.parametrize(
    "overrides, message",
    [
        (
            {"region": "us-east-1"},
            r"region 'us-east-1' is outside allowed_regions \(eu-west-1, eu-central-1\)",
        ),
        (
            {"workers": 1, "gpus_per_worker": 2, "time_limit_hours": 40, "gpu_hours_budget": 64},
            r"estimated 80 GPU-hours .* exceeds gpu_hours_budget=64 by 16 GPU-hours",
        ),
        (  # a budget of 0 means no GPU at all, never "unlimited"
            {"workers": 1, "gpus_per_worker": 2, "time_limit_hours": 0.25, "gpu_hours_budget": 0},
            r"estimated 0.5 GPU-hours .* exceeds gpu_hours_budget=0 by 0.5 GPU-hours",
        ),
    ],
    ids=["region", "budget", "zero-budget"],
)
def test_refusals_happen_before_any_object_exists(
    cluster: KubeCluster,
    namespace: str,
    frame: pd.DataFrame,
    tmp_path: Path,
    overrides: dict[str, Any],
    message: str,
) -> None:
    refused = settings(namespace, tmp_path / "stage", **overrides)
    launcher = KubernetesLauncher(refused, cluster.api_client(), lambda _: None)
    with pytest.raises(ClusterPolicyError, match=message):
        train(frame, SAMPLE_SCHEMA, CONFIG, tmp_path / "model", launcher=launcher)
    task = TrainTaskSettings(launcher="trainjob", cluster=refused)
    with pytest.raises(ClusterPolicyError, match=message):
        launcher_for(task, CONFIG.nproc)  # the task refuses before reading its data
    assert jobs(cluster, namespace) == []
    assert not (tmp_path / "stage").exists(), "nothing staged either"
    pods = client.CoreV1Api(cluster.api_client()).list_namespaced_pod(namespace).items
    assert pods == []


def test_a_service_account_that_cannot_read_the_namespaces_rules_is_refused_before_staging(
    cluster: KubeCluster, namespace: str, frame: pd.DataFrame, tmp_path: Path
) -> None:
    unprivileged = cluster.api_client()
    unprivileged.set_default_header("Impersonate-User", f"system:serviceaccount:{namespace}:default")
    launcher = KubernetesLauncher(settings(namespace, tmp_path / "stage"), unprivileged, lambda _: None)
    with pytest.raises(
        ClusterPolicyError,
        match=rf"cannot read the LimitRanges and ResourceQuotas of namespace '{namespace}' .* \(403 Forbidden\); "
        r"the train task's ServiceAccount needs to read them \(mlops-pipeline-runner",
    ):
        train(frame, SAMPLE_SCHEMA, CONFIG, tmp_path / "model", launcher=launcher)
    assert not (tmp_path / "stage").exists(), "nothing staged"


def test_a_service_account_without_rights_gets_a_clear_refusal(
    cluster: KubeCluster, namespace: str, frame: pd.DataFrame, tmp_path: Path
) -> None:
    # It may read the namespace's rules (as mlops-pipeline-runner may), but not create jobs.
    reader = f"system:serviceaccount:{namespace}:default"
    cluster.kubectl(
        "create",
        "role",
        "rules-reader",
        "-n",
        namespace,
        "--verb=get,list",
        "--resource=limitranges,resourcequotas,localqueues.kueue.x-k8s.io",
    )
    cluster.kubectl(
        "create", "rolebinding", "rules-reader", "-n", namespace, "--role=rules-reader", f"--user={reader}"
    )
    unprivileged = cluster.api_client()
    unprivileged.set_default_header("Impersonate-User", f"system:serviceaccount:{namespace}:default")
    launcher = KubernetesLauncher(settings(namespace, tmp_path / "stage"), unprivileged, lambda _: None)
    with pytest.raises(
        TrainingJobFailed,
        match=rf"cannot create the TrainJob: the train task's ServiceAccount may not create "
        rf"trainjobs.trainer.kubeflow.org in '{namespace}': run it as mlops-pipeline-runner .* \(403 Forbidden\)",
    ):
        train(frame, SAMPLE_SCHEMA, CONFIG, tmp_path / "model", launcher=launcher)
    assert list((tmp_path / "stage").rglob("*.*")) == [], "the refused job's staged file is deleted"


def test_a_missing_namespace_is_named(cluster: KubeCluster, frame: pd.DataFrame, tmp_path: Path) -> None:
    launcher = KubernetesLauncher(settings("team-nowhere", tmp_path / "stage"), cluster.api_client(), print)
    with pytest.raises(
        ClusterPolicyError,
        match=r"namespace 'team-nowhere' has no Kueue LocalQueue 'training' \(or does not exist",
    ):
        train(frame, SAMPLE_SCHEMA, CONFIG, tmp_path / "model", launcher=launcher)


def test_the_root_cause_is_the_ranks_error_not_torchruns_wrapper() -> None:
    from training.kubernetes_launcher import root_cause

    logs = "\n".join(
        [
            "--- train-x-node-0-0 (Failed) ---",
            "[rank0]: Traceback (most recent call last):",
            "[rank0]: mlops.data.dataset.DatasetError: infinite feature values after encoding to float32: 'age' (5 rows).",
            "E1123 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1)",
            "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
            "training.cluster_worker FAILED",
        ]
    )
    assert (
        root_cause(logs) == "DatasetError: infinite feature values after encoding to float32: 'age' (5 rows)."
    )
    assert root_cause("no error here\nexit 1") is None
