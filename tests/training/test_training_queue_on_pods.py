"""Kueue's queueing of training jobs on the real controllers: a job no quota of the namespace could ever
hold is refused before anything is created; jobs that do not fit wait for the ClusterQueue's quota, told why
by Kueue through the launcher, and when it frees the higher priority is admitted first although it came
later. The team namespace and its rules are those of test_training_on_pods.py (tests/training/conftest.py).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
from tests.services.node import Controllers, K8sNode
from tests.training.pods_training import CONFIG, POD_TEST_MARKS, _launcher
from training.kubernetes_config import ClusterPolicyError
from training.kubernetes_jobs import PRIORITY_LABEL, QUEUE_LABEL, TRAINJOB_API
from training.kubernetes_launcher import KUEUE_WORKLOADS
from training.trainer import train

pytestmark = POD_TEST_MARKS


QUEUE_MEMORY = "9Gi"
"""Each job of the queueing test asks this much: two never fit the dev overlay's 16Gi of ClusterQueue quota."""


def _quota_holder(node: K8sNode, ns: str) -> str:
    """A plain Kubernetes Job in the team's queue, at production priority, asking ``QUEUE_MEMORY``: Kueue
    admits it and it holds that quota until deleted (its pod sleeps). Production priority keeps the
    production TrainJob from preempting it (the ClusterQueue preempts only lower priorities)."""
    batch = client.BatchV1Api(node.cluster.api_client())
    size = {"cpu": "100m", "memory": QUEUE_MEMORY}
    batch.create_namespaced_job(
        ns,
        client.V1Job(
            metadata=client.V1ObjectMeta(
                name="quota-holder",
                labels={QUEUE_LABEL: "training", PRIORITY_LABEL: "mlops-production-training"},
            ),
            spec=client.V1JobSpec(
                suspend=True,
                backoff_limit=0,
                template=client.V1PodTemplateSpec(
                    spec=client.V1PodSpec(
                        restart_policy="Never",
                        termination_grace_period_seconds=0,
                        containers=[
                            client.V1Container(
                                name="hold",
                                image=node.image,
                                image_pull_policy="Never",
                                command=["sleep", "3600"],
                                resources=client.V1ResourceRequirements(requests=size, limits=size),
                            )
                        ],
                    )
                ),
            ),
        ),
    )
    return "quota-holder"


def _workloads(node: K8sNode, ns: str) -> dict[str, dict[str, Any]]:
    """Kueue's Workloads of the namespace by the name of the job that owns each."""
    items = client.CustomObjectsApi(node.cluster.api_client()).list_namespaced_custom_object(
        *KUEUE_WORKLOADS[:2], ns, KUEUE_WORKLOADS[2]
    )["items"]
    return {
        w["metadata"]["ownerReferences"][0]["name"]: w for w in items if w["metadata"].get("ownerReferences")
    }


def _condition_time(workload: dict[str, Any], kind: str) -> str | None:
    """When the Workload's condition ``kind`` became True (RFC 3339, seconds), or None."""
    for cond in (workload.get("status") or {}).get("conditions") or []:
        if cond["type"] == kind and cond["status"] == "True":
            return str(cond["lastTransitionTime"])
    return None


def _until(what: str, check: Any, timeout_s: float = 300) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(0.5)
    raise AssertionError(f"not within {timeout_s:.0f} s: {what}")


def _trainjob_by_priority(node: K8sNode, ns: str, priority: str) -> str | None:
    group, version, plural, _ = TRAINJOB_API
    items = client.CustomObjectsApi(node.cluster.api_client()).list_namespaced_custom_object(
        group, version, ns, plural, label_selector=f"{PRIORITY_LABEL}={priority}"
    )["items"]
    return str(items[0]["metadata"]["name"]) if items else None


def test_jobs_wait_for_the_queues_quota_and_the_higher_priority_starts_first(
    k8s_controllers: Controllers, team: tuple[str, str], tmp_path: Path
) -> None:
    """A job that could never fit is refused up front. Then the quota is held; an experiment, then a production
    retraining, are submitted and wait for it; when it frees, Kueue admits the production job first although it
    came later, and the experiment after it."""
    node = k8s_controllers.node
    ns, staging = team
    frame = generate(SampleDataConfig(rows=2_000, seed=44))
    config = CONFIG.model_copy(update={"epochs": 1, "nproc": 1})
    # A job no quota of the namespace could ever hold is refused before anything is created, naming the limit.
    never = _launcher(node, ns, staging, [], workers=1, cpu_per_worker="9", memory_per_worker="1Gi")
    with pytest.raises(ClusterPolicyError, match="could never be admitted") as refused:
        train(frame, SAMPLE_SCHEMA, config, tmp_path / "never", launcher=never)
    assert "cpu" in str(refused.value) and "cpu_per_worker=9" in str(refused.value), refused.value
    assert _trainjob_by_priority(node, ns, "mlops-experiment") is None
    holder = _quota_holder(node, ns)
    _until(
        "Kueue admits the quota holder",
        lambda: _condition_time(_workloads(node, ns).get(holder, {}), "Admitted"),
    )
    reports: dict[str, list[str]] = {"mlops-experiment": [], "mlops-production-training": []}
    outcomes: dict[str, Any] = {}

    def submit(priority: str) -> threading.Thread:
        def work() -> None:
            launcher = _launcher(
                node, ns, staging, reports[priority], workers=1, cpu_per_worker="1",
                memory_per_worker=QUEUE_MEMORY, priority_class=priority, keep_job=True,
            )  # fmt: skip
            try:
                outcomes[priority] = train(
                    frame, SAMPLE_SCHEMA, config, tmp_path / priority, launcher=launcher
                )
            except Exception as exc:  # the assertion below shows it
                outcomes[priority] = exc

        thread = threading.Thread(target=work, daemon=True)
        thread.start()
        return thread

    def pending(priority: str) -> str | None:
        job = _trainjob_by_priority(node, ns, priority)
        workload = _workloads(node, ns).get(job or "")
        held = workload and not _condition_time(workload, "QuotaReserved")
        return job if held and any("waiting for Kueue admission: " in r for r in reports[priority]) else None

    threads = [submit("mlops-experiment")]
    experiment = _until("the experiment waits for quota", lambda: pending("mlops-experiment"))
    threads.append(submit("mlops-production-training"))
    production = _until("the production job waits for quota", lambda: pending("mlops-production-training"))
    # Both wait, each told why by Kueue through the launcher; the holder keeps its quota (not preempted).
    for priority in reports:
        waiting = [r for r in reports[priority] if "waiting for Kueue admission: " in r]
        assert any("insufficient unused quota for memory" in r for r in waiting), reports[priority]
    assert _condition_time(_workloads(node, ns)[holder], "Admitted"), "the holder was preempted"
    client.BatchV1Api(node.cluster.api_client()).delete_namespaced_job(
        holder, ns, propagation_policy="Background", grace_period_seconds=0
    )
    for thread in threads:
        thread.join(timeout=900)
    for priority, outcome in outcomes.items():
        assert not isinstance(outcome, BaseException), f"{priority}: {outcome!r}\n" + "\n".join(
            reports[priority]
        )
    assert len(outcomes) == 2, reports
    workloads = _workloads(node, ns)
    production_admitted = _condition_time(workloads[production], "QuotaReserved")
    production_finished = _condition_time(workloads[production], "Finished")
    experiment_admitted = _condition_time(workloads[experiment], "QuotaReserved")
    assert production_admitted and production_finished and experiment_admitted, workloads
    # Later but higher: the production job got the quota first; the experiment only once it was free again.
    assert production_admitted <= production_finished <= experiment_admitted, (
        production_admitted,
        production_finished,
        experiment_admitted,
    )
