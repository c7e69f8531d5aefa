"""Distributed training as real pods: two ranks of the platform image train together over gloo.

The team namespace carries the dev overlay's own LimitRange, ResourceQuota and Kueue LocalQueue
(and the cluster's PriorityClasses): the launcher checks its plan against them, and the API server
admits the pods under them, a default-sized job included.

The Kubernetes launcher creates its TrainJob on the real API server; the Trainer and JobSet are
played by :class:`tests.support.trainer_standin.TrainerStandIn`, which creates the pods they would
(same image, command and environment, torchrun's ``PET_*`` rendezvous). The pods read the staged job
from the real S3 (Ceph RGW) and write their checkpoints and rank 0's result there; the launcher
decides success or failure from the TrainJob's condition and the pods' real outcomes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from kubernetes import client

from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
from tests.services.node import K8sNode
from tests.services.plugin import MlflowService
from tests.support.k8s_controller import apply_team_rules, install_crds
from tests.support.pods import namespace
from tests.support.trainer_standin import TrainerStandIn
from training.config import ModelConfig, TrainConfig, resolve_runtime
from training.data import encode_splits, split_frame
from training.kubernetes_config import KubernetesJobSettings
from training.kubernetes_jobs import TRAINJOB_API
from training.kubernetes_launcher import CHECKPOINTS, KubernetesLauncher, TrainingJobFailed
from training.launcher import RESULT_FILE
from training.loop import WorkerJob
from training.tracking import NullLogger
from training.trainer import train

# The first test of a session may build the platform image (minutes cold) and unpack it on the node.
pytestmark = [pytest.mark.timeout(2400), pytest.mark.slow]
CONFIG = TrainConfig(
    epochs=8,
    batch_size=256,
    learning_rate=3e-3,
    model=ModelConfig(hidden_units=(64, 32), dropout=0.0),
    precision="fp32",
    device="cpu",
    patience=0,
    nproc=2,
)
S3_SETTINGS = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_DEFAULT_REGION",
    "MLOPS_S3_SSE",
    "MLOPS_S3_SSE_KMS_KEY_ID",
)


@pytest.fixture
def team(
    k8s_node: K8sNode, mlflow_server: MlflowService, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[str, str]]:
    """A team namespace with the S3 credentials Secret the pods read; the S3 endpoint as pods reach it."""
    install_crds(k8s_node.cluster)
    s3 = mlflow_server.s3
    for key in S3_SETTINGS:
        monkeypatch.setenv(key, s3.env[key])
    # The task forwards its S3 endpoint to the pods: give it the address they (and this machine) reach.
    monkeypatch.setenv("MLFLOW_S3_ENDPOINT_URL", k8s_node.from_pod(s3.endpoint))
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with namespace(k8s_node, "team-train") as ns:
        apply_team_rules(k8s_node.cluster, ns)  # the dev overlay's LimitRange, ResourceQuota and queue
        k8s_node.core().create_namespaced_secret(
            ns,
            client.V1Secret(
                metadata=client.V1ObjectMeta(name="mlops-tracking"),
                string_data={
                    "aws-access-key-id": s3.env["AWS_ACCESS_KEY_ID"],
                    "aws-secret-access-key": s3.env["AWS_SECRET_ACCESS_KEY"],
                },
            ),
        )
        yield ns, f"s3://{s3.bucket}/training-staging"


def _launcher(node: K8sNode, ns: str, staging: str, reports: list[str]) -> KubernetesLauncher:
    settings = KubernetesJobSettings(
        namespace=ns,
        staging_uri=staging,
        workers=2,
        cpu_per_worker="500m",
        memory_per_worker="2Gi",
        training_image=node.image,
        poll_interval_s=0.5,
        time_limit_hours=0.5,
    )
    return KubernetesLauncher(
        settings, "trainjob", api_client=node.cluster.api_client(), report=reports.append
    )


def _job_name(node: K8sNode, ns: str) -> str:
    group, version, plural, _ = TRAINJOB_API
    custom = client.CustomObjectsApi(node.cluster.api_client())
    while not (items := custom.list_namespaced_custom_object(group, version, ns, plural)["items"]):
        time.sleep(0.2)
    return str(items[0]["metadata"]["name"])


def _kill_a_worker_after_a_checkpoint(
    node: K8sNode, mlflow_server: MlflowService, ns: str, operator: TrainerStandIn, killed: list[str]
) -> None:
    """Once rank 0 has uploaded a checkpoint, delete node 1's pod at once (a preempted or lost node)."""
    s3 = mlflow_server.s3
    key = f"training-staging/{_job_name(node, ns)}/{CHECKPOINTS}/last.pt"
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and not s3.keys(key):
        time.sleep(0.2)
    worker = operator.attempts[0][1]
    node.core().delete_namespaced_pod(worker, ns, grace_period_seconds=0)
    killed.append(worker)


def test_two_pods_train_together_and_resume_from_s3_after_a_worker_is_killed(
    k8s_node: K8sNode, mlflow_server: MlflowService, team: tuple[str, str], tmp_path: Path
) -> None:
    ns, staging = team
    frame = generate(SampleDataConfig(rows=30_000, seed=41))
    reports: list[str] = []
    killed: list[str] = []
    with TrainerStandIn(k8s_node, ns) as operator:
        killer = threading.Thread(
            target=_kill_a_worker_after_a_checkpoint,
            args=(k8s_node, mlflow_server, ns, operator, killed),
            daemon=True,
        )
        killer.start()
        result = train(
            frame,
            SAMPLE_SCHEMA,
            CONFIG,
            tmp_path / "model",
            launcher=_launcher(k8s_node, ns, staging, reports),
        )
        killer.join(timeout=30)

    assert killed == [operator.attempts[0][1]], reports
    assert len(operator.attempts) == 2 and operator.outcome == "Complete"
    # The restarted ranks resumed from the checkpoint in S3 and finished every epoch.
    assert 1 <= result.resumed_from_epoch < CONFIG.epochs
    assert [h.epoch for h in result.history] == list(range(1, CONFIG.epochs + 1))
    assert result.best_val_auc > 0.7
    assert (tmp_path / "model").is_dir()
    # What the pods wrote is in S3: the checkpoint and rank 0's result; the launcher saw them run.
    job = next(r.split()[1].split("/")[1] for r in reports if r.startswith("TrainJob ") and "created" in r)
    s3 = mlflow_server.s3
    written = s3.keys(f"training-staging/{job}/")
    assert f"training-staging/{job}/{CHECKPOINTS}/last.pt" in written
    assert f"training-staging/{job}/{RESULT_FILE}" in written
    assert any("running (2 pod(s) running)" in r for r in reports), reports
    assert reports[-1] == f"TrainJob {ns}/{job} deleted"


def test_a_worker_failing_on_bad_data_fails_the_job_with_its_last_log_lines(
    k8s_node: K8sNode, team: tuple[str, str]
) -> None:
    ns, staging = team
    frame = generate(SampleDataConfig(rows=2_000, seed=42))
    config = CONFIG.model_copy(update={"epochs": 2})
    data = encode_splits(split_frame(frame, SAMPLE_SCHEMA, config), SAMPLE_SCHEMA)
    corrupted = data.x_train.copy()
    corrupted[:5, 0] = np.inf  # a staged job whose data went bad after the task checked it
    job = WorkerJob(
        data=replace(data, x_train=corrupted),
        config=config,
        runtime=resolve_runtime(config),
        fingerprint="bad-data",
        checkpoint_dir=None,
        logger=NullLogger(),
    )
    reports: list[str] = []
    with TrainerStandIn(k8s_node, ns) as operator, pytest.raises(TrainingJobFailed) as failure:
        _launcher(k8s_node, ns, staging, reports).run(job)
    message = str(failure.value)
    assert operator.outcome == "Failed"
    assert len(operator.attempts) == operator.max_restarts + 1  # JobSet retried, then gave up
    assert f"failurePolicy.maxRestarts={operator.max_restarts}" in message
    first = data.spec.names[0]
    assert f"infinite feature values after encoding to float32: {first!r} (5 rows)" in message, message
    assert "(Failed) ---" in message  # the failed pods' own log lines, under their names
    assert message.splitlines()[1].startswith("cause: DatasetError: infinite feature values")


def test_a_default_sized_job_is_admitted_and_runs_under_the_teams_rules(
    k8s_node: K8sNode, team: tuple[str, str], tmp_path: Path
) -> None:
    ns, staging = team
    defaults = KubernetesJobSettings()
    settings = KubernetesJobSettings(
        namespace=ns,
        staging_uri=staging,
        training_image=k8s_node.image,
        poll_interval_s=0.5,
        keep_job=True,  # its pods stay for inspection
    )
    assert (settings.workers, settings.cpu_per_worker, settings.memory_per_worker) == (
        defaults.workers,
        defaults.cpu_per_worker,
        defaults.memory_per_worker,
    )
    frame = generate(SampleDataConfig(rows=3_000, seed=43))
    config = CONFIG.model_copy(update={"epochs": 2, "nproc": 1})
    reports: list[str] = []
    launcher = KubernetesLauncher(
        settings, "trainjob", api_client=k8s_node.cluster.api_client(), report=reports.append
    )
    with TrainerStandIn(k8s_node, ns) as operator:
        result = train(frame, SAMPLE_SCHEMA, config, tmp_path / "model", launcher=launcher)
    assert operator.outcome == "Complete" and [h.epoch for h in result.history] == [1, 2], reports
    (pod_name,) = operator.attempts[0]
    pod = k8s_node.core().read_namespaced_pod(pod_name, ns)
    resources = pod.spec.containers[0].resources
    # Admitted as sent: requests and limits together, nothing defaulted by the LimitRange.
    assert resources.requests == resources.limits == {"cpu": "2", "memory": "8Gi"}
    # The runtime's priority, resolved by the API server's Priority admission from the overlay's class.
    assert (pod.spec.priority_class_name, pod.spec.priority) == ("mlops-experiment", 1000)
    assert pod.status.phase == "Succeeded"
