"""Distributed training on the real controllers: Kueue admits the TrainJob, Kubeflow Trainer and JobSet make
the pods, the node's kubelet runs them.

The team namespace carries the dev overlay's own LimitRange, ResourceQuota and Kueue LocalQueue (and the
cluster's PriorityClasses, ResourceFlavors and ClusterQueue), the platform's ClusterTrainingRuntimes are
those of ``infra/k8s/base/platform``, and each object passes the releases' own admission webhooks. Kueue
admits the job onto the ClusterQueue's CPU flavor (the dev overlay's flavors carry no region label: a
laptop's node has none).

The pods read the staged job from the real S3 (Ceph RGW), find their rendezvous by the names JobSet's
headless Service gives them (cluster DNS), and write checkpoints and rank 0's result to S3; the launcher
decides success or failure from the TrainJob's conditions and the pods' real outcomes.

Kueue's queueing (quota and priority) on the same controllers is in test_training_queue_on_pods.py.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pytest
import yaml
from kubernetes import client

from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
from tests.services.node import Controllers, K8sNode
from tests.services.plugin import MlflowService
from tests.training.pods_training import CONFIG, POD_TEST_MARKS, RUNTIMES, _launcher
from training.config import resolve_runtime
from training.data_splits import encode_splits, split_frame
from training.kubernetes_config import KubernetesJobSettings
from training.kubernetes_jobs import JOB_LABEL, TRAINJOB_API
from training.kubernetes_launcher import CHECKPOINTS, KubernetesLauncher, TrainingJobFailed
from training.launcher import RESULT_FILE
from training.loop import WorkerJob
from training.metrics_logger import NullLogger
from training.model import rank_step_macs
from training.trainer import train

pytestmark = POD_TEST_MARKS


RESTART_ATTEMPT = "jobset.sigs.k8s.io/restart-attempt"
RANK_INDEX = "batch.kubernetes.io/job-completion-index"
"""The Trainer runs a TrainJob's nodes as one indexed Job: a pod's completion index is its node rank."""


def max_restarts() -> int:
    """JobSet's ``failurePolicy.maxRestarts`` of the platform runtimes (the same in both)."""
    (value,) = {
        int(doc["spec"]["template"]["spec"]["failurePolicy"]["maxRestarts"])
        for doc in yaml.safe_load_all(RUNTIMES.read_text(encoding="utf-8"))
    }
    return value


@dataclass
class PodWatch:
    """Every pod of the namespace's TrainJob as seen by polling: name → (restart attempt, node rank, phase)."""

    node: K8sNode
    namespace: str
    seen: dict[str, tuple[int, int, str]] = field(default_factory=dict)
    stopped: threading.Event = field(default_factory=threading.Event)

    def poll(self) -> None:
        for pod in self.node.core().list_namespaced_pod(self.namespace, label_selector=JOB_LABEL).items:
            labels = pod.metadata.labels or {}
            attempt, index = int(labels.get(RESTART_ATTEMPT, -1)), int(labels.get(RANK_INDEX, -1))
            self.seen[pod.metadata.name] = (attempt, index, pod.status.phase or "Pending")

    def run(self) -> None:
        while not self.stopped.is_set():
            self.poll()
            time.sleep(0.3)

    def attempts(self) -> dict[int, list[str]]:
        out: dict[int, list[str]] = {}
        for name, (attempt, _, _) in sorted(self.seen.items()):
            out.setdefault(attempt, []).append(name)
        return out


def _job_name(node: K8sNode, ns: str) -> str:
    group, version, plural, _ = TRAINJOB_API
    custom = client.CustomObjectsApi(node.cluster.api_client())
    while not (items := custom.list_namespaced_custom_object(group, version, ns, plural)["items"]):
        time.sleep(0.2)
    return str(items[0]["metadata"]["name"])


def _kill_a_worker_after_a_checkpoint(
    node: K8sNode, mlflow_server: MlflowService, ns: str, killed: list[str]
) -> None:
    """Once rank 0 has uploaded a checkpoint, delete node 1's pod at once (a preempted or lost node)."""
    key = f"training-staging/{_job_name(node, ns)}/{CHECKPOINTS}/last.pt"
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and not mlflow_server.s3.keys(key):
        time.sleep(0.2)
    (worker,) = [
        p.metadata.name
        for p in node.core()
        .list_namespaced_pod(ns, label_selector=f"{RANK_INDEX}=1,{RESTART_ATTEMPT}=0")
        .items
    ]
    node.core().delete_namespaced_pod(worker, ns, grace_period_seconds=0)
    killed.append(worker)


def _events(node: K8sNode, ns: str, kind: str, name: str) -> list[tuple[str, str, str]]:
    """(source, reason, message) of the events the controllers wrote about one object."""
    selector = f"involvedObject.kind={kind},involvedObject.name={name}"
    items = node.core().list_namespaced_event(ns, field_selector=selector).items
    return [
        (e.reporting_component or (e.source.component if e.source else "") or "", e.reason, e.message)
        for e in items
    ]


def test_two_pods_train_together_and_resume_from_s3_after_a_worker_is_killed(
    k8s_controllers: Controllers, mlflow_server: MlflowService, team: tuple[str, str], tmp_path: Path
) -> None:
    node = k8s_controllers.node
    ns, staging = team
    frame = generate(SampleDataConfig(rows=30_000, seed=41))
    reports: list[str] = []
    killed: list[str] = []
    watch = PodWatch(node, ns)
    watcher = threading.Thread(target=watch.run, daemon=True)
    killer = threading.Thread(
        target=_kill_a_worker_after_a_checkpoint, args=(node, mlflow_server, ns, killed), daemon=True
    )
    watcher.start()
    killer.start()
    launcher = _launcher(node, ns, staging, reports, keep_job=True)
    result = train(frame, SAMPLE_SCHEMA, CONFIG, tmp_path / "model", launcher=launcher)
    killer.join(timeout=30)
    watch.stopped.set()
    watcher.join(timeout=10)
    watch.poll()

    attempts = watch.attempts()
    # Two pods (node ranks 0 and 1) per attempt; the kill made JobSet restart the whole group once.
    assert sorted(attempts) == [0, 1], (watch.seen, reports)
    assert killed and killed[0] in attempts[0], (killed, watch.seen)
    assert sorted(watch.seen[p][1] for p in attempts[1]) == [0, 1]
    assert all(watch.seen[p][2] == "Succeeded" for p in attempts[1]), watch.seen
    # The restarted ranks resumed from the checkpoint in S3 and finished every epoch.
    assert 1 <= result.resumed_from_epoch < CONFIG.epochs
    assert [h.epoch for h in result.history] == list(range(1, CONFIG.epochs + 1))
    assert result.best_val_auc > 0.7
    job = _job_name(node, ns)
    group, version, plural, _ = TRAINJOB_API
    custom = client.CustomObjectsApi(node.cluster.api_client())
    uid = custom.get_namespaced_custom_object(group, version, ns, plural, job)["metadata"]["uid"]
    written = mlflow_server.s3.keys(f"training-staging/{job}/")
    assert f"training-staging/{job}/{CHECKPOINTS}/last.pt" in written
    assert f"training-staging/{job}/{RESULT_FILE}" in written
    assert any("running (2 pod(s) running)" in r for r in reports), reports
    # Kueue held the job, then admitted it: its events on the TrainJob say so.
    reasons = {reason for _, reason, _ in _events(node, ns, "TrainJob", job)}
    assert {"CreatedWorkload", "Started"} <= reasons, reasons
    # The pods the real controllers made: the runtime's priority, the size asked for, the flavor's region.
    pod = node.core().read_namespaced_pod(attempts[1][0], ns)
    resources = pod.spec.containers[0].resources
    assert resources.requests == resources.limits == {"cpu": "500m", "memory": "2Gi"}
    assert (pod.spec.priority_class_name, pod.spec.priority) == ("mlops-experiment", 1000)
    # Kueue's admission, as its Workload for the job records it: the overlay's queue and CPU flavor.
    (workload,) = client.CustomObjectsApi(node.cluster.api_client()).list_namespaced_custom_object(
        "kueue.x-k8s.io", "v1beta2", ns, "workloads", label_selector=f"kueue.x-k8s.io/job-uid={uid}"
    )["items"]
    admission = workload["status"]["admission"]
    assert admission["clusterQueue"] == "mlops-training", admission
    flavors = admission["podSetAssignments"][0]["flavors"]
    assert flavors == {"cpu": "cpu-eu-west-1", "memory": "cpu-eu-west-1"}, admission
    description = node.cluster.kubectl("describe", "trainjob", job, "-n", ns).stdout
    print(description)
    custom.delete_namespaced_custom_object(group, version, ns, plural, job, propagation_policy="Background")


def test_a_worker_failing_on_bad_data_fails_the_job_with_its_last_log_lines(
    k8s_controllers: Controllers, team: tuple[str, str]
) -> None:
    node = k8s_controllers.node
    ns, staging = team
    frame = generate(SampleDataConfig(rows=2_000, seed=42))
    config = CONFIG.model_copy(update={"epochs": 2})
    data = encode_splits(split_frame(frame, SAMPLE_SCHEMA, config), SAMPLE_SCHEMA)
    corrupted = data.x_train.copy()
    corrupted[:5, 0] = np.inf  # a staged job whose data went bad after the task checked it
    job = WorkerJob(
        data=replace(data, x_train=corrupted),
        config=config,
        runtime=resolve_runtime(config, macs_per_step=rank_step_macs(data.spec, config)),
        fingerprint="bad-data",
        checkpoint_dir=None,
        logger=NullLogger(),
    )
    reports: list[str] = []
    watch = PodWatch(node, ns)
    watcher = threading.Thread(target=watch.run, daemon=True)
    watcher.start()
    with pytest.raises(TrainingJobFailed) as failure:
        _launcher(node, ns, staging, reports).run(job)
    watch.stopped.set()
    watcher.join(timeout=10)
    message = str(failure.value)
    # JobSet restarted the group maxRestarts times, then failed it; the Trainer failed the TrainJob.
    assert sorted(watch.attempts()) == list(range(max_restarts() + 1)), watch.seen
    first = data.spec.names[0]
    assert f"infinite feature values after encoding to float32: {first!r} (5 rows)" in message, message
    assert "(Failed) ---" in message  # the failed pods' own log lines, under their names
    assert message.splitlines()[1].startswith("cause: DatasetError: infinite feature values")


def test_a_default_sized_job_is_admitted_and_runs_under_the_teams_rules(
    k8s_controllers: Controllers, team: tuple[str, str], tmp_path: Path
) -> None:
    node = k8s_controllers.node
    ns, staging = team
    defaults = KubernetesJobSettings()
    settings = KubernetesJobSettings(
        namespace=ns,
        staging_uri=staging,
        training_image=node.image,
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
    launcher = KubernetesLauncher(settings, api_client=node.cluster.api_client(), report=reports.append)
    result = train(frame, SAMPLE_SCHEMA, config, tmp_path / "model", launcher=launcher)
    assert [h.epoch for h in result.history] == [1, 2], reports
    (pod,) = node.core().list_namespaced_pod(ns, label_selector=JOB_LABEL).items
    resources = pod.spec.containers[0].resources
    # Admitted as sent: requests and limits together, nothing defaulted by the LimitRange.
    assert resources.requests == resources.limits == {"cpu": "2", "memory": "8Gi"}
    # The runtime's priority, resolved by the API server's Priority admission from the overlay's class.
    assert (pod.spec.priority_class_name, pod.spec.priority) == ("mlops-experiment", 1000)
    assert pod.status.phase == "Succeeded"
