"""Stand-in for Kubeflow Trainer's controller and JobSet (neither can run here), over real pods.

The API server, scheduler, kubelet and containerd are real; this thread plays only the controller.
For the first TrainJob created in its namespace it does what the Trainer (torch plugin) and JobSet
would: one pod per node from ``spec.trainer`` (image, command, env, resources) with the runtime
patches' labels and placement, torchrun's rendezvous in ``PET_*`` variables, owned by the TrainJob
(the garbage collector removes the pods when the launcher deletes it). Then it watches the pods:

- all Succeeded: the TrainJob's ``Complete`` condition;
- one Failed or gone (deleted, as a preempted or lost node's pod is): every pod of the attempt is
  deleted and the group started again, as JobSet's ``failurePolicy.maxRestarts`` does, up to the
  platform runtime's value (infra/k8s/base/platform/trainingruntime.yaml);
- still failing after that: the ``Failed`` condition; the last attempt's pods stay for their logs.

Where this differs from the real controllers: there is no cluster DNS here, so ``PET_MASTER_ADDR``
is node 0's pod IP (the Trainer names a headless Service), and node 0 is created first to learn it.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client

from tests.services.node import K8sNode
from tests.support.k8s_controller import PlayedController, condition
from training.kubernetes_jobs import TRAINJOB_API

RUNTIME = Path(__file__).resolve().parents[2] / "infra" / "k8s" / "base" / "platform" / "trainingruntime.yaml"
MASTER_PORT = 29400
"""The Trainer's torch plugin default rendezvous port."""


@dataclass(frozen=True)
class Runtime:
    """What the stand-in plays of one platform ClusterTrainingRuntime."""

    name: str
    max_restarts: int
    """JobSet ``failurePolicy.maxRestarts``."""
    priority_class: str
    """The pod template's ``priorityClassName`` (a TrainJob cannot patch it: the runtime sets it)."""


def runtimes(path: Path = RUNTIME) -> dict[str, Runtime]:
    """The platform's ClusterTrainingRuntimes by name."""
    out = {}
    for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
        spec = doc["spec"]["template"]["spec"]
        pod = spec["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
        name = doc["metadata"]["name"]
        out[name] = Runtime(name, int(spec["failurePolicy"]["maxRestarts"]), pod.get("priorityClassName", ""))
    return out


@dataclass
class TrainerStandIn(PlayedController):
    """Plays the Trainer + JobSet for the first TrainJob in ``namespace``; use as a context manager."""

    node: K8sNode
    namespace: str
    attempts: list[list[str]] = field(default_factory=list)
    """Pod names of every attempt, in order."""
    outcome: str = ""
    """``Complete`` or ``Failed`` once the TrainJob has its final condition."""
    error: BaseException | None = None

    def __post_init__(self) -> None:
        api = self.node.cluster.api_client()
        self.custom, self.core = client.CustomObjectsApi(api), client.CoreV1Api(api)
        self.runtimes = runtimes()
        self.max_restarts = max(r.max_restarts for r in self.runtimes.values())
        self.priority_class = ""
        self.thread = threading.Thread(target=self._guarded, daemon=True, name="trainer-stand-in")

    def _play(self) -> None:
        job = self._wait_for_trainjob()
        ref = job["spec"]["runtimeRef"]["name"]
        if ref not in self.runtimes:
            raise AssertionError(
                f"the TrainJob runs on {ref!r}; this stand-in plays the platform runtimes {sorted(self.runtimes)}"
            )
        self.max_restarts = self.runtimes[ref].max_restarts
        self.priority_class = self.runtimes[ref].priority_class
        for attempt in range(self.max_restarts + 1):
            pods = self._start_group(job, attempt)
            self.attempts.append(pods)
            result, detail = self._watch(pods)
            if result == "succeeded":
                self._finish(job, condition("Complete", "JobsCompleted", "all nodes succeeded"))
                return
            if attempt == self.max_restarts:
                message = (
                    f"{detail}; restarted {attempt} time(s), failurePolicy.maxRestarts={self.max_restarts}"
                )
                self._finish(job, condition("Failed", "JobSetFailed", message))
                return
            for name in pods:  # JobSet restarts the whole group: every rank rejoins a new rendezvous
                self._delete(name)

    def _finish(self, job: dict[str, Any], final: dict[str, Any]) -> None:
        group, version, plural, _ = TRAINJOB_API
        body = {"status": {"conditions": [final]}}
        name = job["metadata"]["name"]
        self.custom.patch_namespaced_custom_object_status(group, version, self.namespace, plural, name, body)
        self.outcome = final["type"]

    def _wait_for_trainjob(self) -> dict[str, Any]:
        group, version, plural, _ = TRAINJOB_API
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            items = self.custom.list_namespaced_custom_object(group, version, self.namespace, plural)["items"]
            if items:
                return dict(items[0])
            time.sleep(0.2)
        raise TimeoutError(f"no TrainJob was created in {self.namespace}")

    def _start_group(self, job: dict[str, Any], attempt: int) -> list[str]:
        nodes = int(job["spec"]["trainer"]["numNodes"])
        names = [self._create_pod(job, attempt, 0, "127.0.0.1")]  # node 0 hosts the rendezvous store
        master = self._pod_ip(names[0])
        names += [self._create_pod(job, attempt, rank, master) for rank in range(1, nodes)]
        return names

    def _create_pod(self, job: dict[str, Any], attempt: int, rank: int, master: str) -> str:
        trainer, name = job["spec"]["trainer"], job["metadata"]["name"]
        template = _runtime_patch(job)
        env = [dict(e) for e in trainer.get("env", [])] + [
            {"name": "PET_NNODES", "value": str(trainer["numNodes"])},
            {"name": "PET_NPROC_PER_NODE", "value": str(trainer["numProcPerNode"])},
            {"name": "PET_NODE_RANK", "value": str(rank)},
            {"name": "PET_MASTER_ADDR", "value": master},
            {"name": "PET_MASTER_PORT", "value": str(MASTER_PORT)},
        ]
        labels = {
            **template.get("metadata", {}).get("labels", {}),
            "jobset.sigs.k8s.io/restart-attempt": str(attempt),
        }
        spec = {
            **template.get("spec", {}),
            "restartPolicy": "Never",
            "priorityClassName": self.priority_class,
            "securityContext": {"runAsNonRoot": True},
            "containers": [
                {
                    "name": "node",
                    "image": trainer["image"],
                    "imagePullPolicy": "Never",
                    "command": trainer["command"],
                    "env": env,
                    "resources": trainer.get("resourcesPerNode", {}),
                }
            ],
        }
        owner = {
            "apiVersion": job["apiVersion"],
            "kind": "TrainJob",
            "name": name,
            "uid": job["metadata"]["uid"],
            "controller": True,
        }
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{name}-node-0-{rank}-a{attempt}",
                "labels": labels,
                "ownerReferences": [owner],
            },
            "spec": spec,
        }
        return str(self.core.create_namespaced_pod(self.namespace, pod).metadata.name)

    def _pod_ip(self, name: str) -> str:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            pod = self.core.read_namespaced_pod(name, self.namespace)
            if pod.status.pod_ip:
                return str(pod.status.pod_ip)
            if pod.status.phase == "Failed":
                raise AssertionError(f"rendezvous pod {name} failed before it had an address")
            time.sleep(0.2)
        raise TimeoutError(f"pod {name} got no IP in 120 s")

    def _watch(self, pods: list[str]) -> tuple[str, str]:
        """``succeeded`` when every pod has; ``failed`` (with what happened) at the first loss or failure."""
        while True:
            phases: dict[str, str] = {}
            for name in pods:
                try:
                    pod = self.core.read_namespaced_pod(name, self.namespace)
                except client.ApiException as exc:
                    if exc.status == 404:
                        return "failed", f"pod {name} was lost (deleted)"
                    raise
                if pod.metadata.deletion_timestamp:
                    return "failed", f"pod {name} was lost (deleted)"
                phases[name] = pod.status.phase or "Pending"
                if phases[name] == "Failed":
                    return "failed", f"pod {name} failed: {_exit(pod)}"
            if all(phase == "Succeeded" for phase in phases.values()):
                return "succeeded", ""
            time.sleep(0.3)

    def _delete(self, name: str) -> None:
        try:
            self.core.delete_namespaced_pod(name, self.namespace, grace_period_seconds=0)
        except client.ApiException as exc:
            if exc.status != 404:
                raise


def _runtime_patch(job: dict[str, Any]) -> dict[str, Any]:
    """The pod template the launcher patched into the runtime's ``node`` job (labels, placement)."""
    for patch in job["spec"].get("runtimePatches", []):
        spec = patch.get("trainingRuntimeSpec", {}).get("template", {}).get("spec", {})
        for replicated in spec.get("replicatedJobs", []):
            if replicated["name"] == "node":
                return dict(replicated["template"]["spec"]["template"])
    return {}


def _exit(pod: Any) -> str:
    for status in pod.status.container_statuses or []:
        terminated = status.state.terminated if status.state else None
        if terminated is not None:
            return f"exit code {terminated.exit_code} ({terminated.reason})"
    return "no exit status"
