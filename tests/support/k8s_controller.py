"""Stand-in for the Kubeflow Trainer controller on an API server without a node.

The launcher's state machine (queued, pending, running, succeeded, failed, timed out), its audit
records and its cleanup are checked here in seconds, on an API server that has no node: this thread
plays the controller, and says so. Once the launcher has created its job it does what the controller
(with Kueue and the kubelet) would be seen doing through the API: the job waits suspended (queued),
then its pods appear Pending, then Running; then, by ``outcome``:

- ``succeed``: the pod command in the created object runs for real on this machine
  (:func:`tests.support.k8s_pods.run_pod_command`: the job's whole world on one node),
  then pods and job are marked succeeded — or failed, if the command failed;
- ``fail``: pods Failed and the job's Failed condition with a reason;
- ``hang``: the job stays running (the launcher's time limit must end it).

What it hides: Kueue's admission and webhooks, the Trainer's and JobSet's reconciling (runtime patches,
torchrun's rendezvous through the headless Service, restarts), the scheduler and kubelet (resources,
priority, placement). tests/training/test_training_on_pods.py and test_training_queue_on_pods.py (quota
and priority) run the same TrainJobs on the real Kueue, Trainer and JobSet controllers and a real node.
"""

from __future__ import annotations

import datetime
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from kubernetes import client

from tests.support.k8s_pods import run_pod_command
from training.kubernetes_jobs import JOB_LABEL, TRAINJOB_API

Outcome = Literal["succeed", "fail", "hang"]
FAILURE_REASON = "BackoffLimitExceeded"
STAGE_SECONDS = 1.0


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition(kind: str, reason: str, message: str = "") -> dict[str, Any]:
    return {
        "type": kind,
        "status": "True",
        "reason": reason,
        "message": message,
        "lastTransitionTime": _now(),
    }


class PlayedController:
    """A controller played by a thread: it starts on ``with``, is joined on exit, and its error re-raised.

    Subclasses define ``_play`` and set ``self.thread = threading.Thread(target=self._guarded, ...)``
    and ``self.error = None``. A 404 ends the play quietly: the launcher deleted the job.
    """

    thread: threading.Thread
    error: BaseException | None

    def _hold(self, phase: str) -> None:
        """Keep the current stage for several of the launcher's polls, or until it reported ``phase``."""
        if self.reports is None:
            time.sleep(STAGE_SECONDS)
            return
        deadline = time.monotonic() + 60
        while not any(f": {phase}" in line for line in self.reports):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the launcher never reported {phase!r}: {self.reports}")
            time.sleep(0.05)

    def _play(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Any:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.thread.join(timeout=300)
        if self.error is not None:
            raise self.error

    def _guarded(self) -> None:
        try:
            self._play()
        except client.ApiException as exc:
            if exc.status != 404:
                self.error = exc
        except BaseException as exc:
            self.error = exc


@dataclass
class JobController(PlayedController):
    """Plays the controller for the first TrainJob created in ``namespace``."""

    api_client: Any
    namespace: str
    outcome: Outcome
    seen: dict[str, Any] = field(default_factory=dict)
    error: BaseException | None = None
    pod_output: str = ""
    reports: list[str] | None = None
    """The launcher's report lines: given, each stage lasts until the launcher has reported it
    (a loaded machine may delay its polls past a fixed stage time)."""

    def __post_init__(self) -> None:
        self.custom = client.CustomObjectsApi(self.api_client)
        self.core = client.CoreV1Api(self.api_client)
        self.api = TRAINJOB_API
        self.thread = threading.Thread(target=self._guarded, daemon=True)

    def _status(self, name: str, conditions: list[dict[str, Any]]) -> None:
        group, version, plural, _ = self.api
        body = {"status": {"conditions": conditions}}
        self.custom.patch_namespaced_custom_object_status(group, version, self.namespace, plural, name, body)

    def _wait_for_job(self) -> dict[str, Any]:
        group, version, plural, _ = self.api
        for _ in range(600):
            items = self.custom.list_namespaced_custom_object(group, version, self.namespace, plural)["items"]
            if items:
                return dict(items[0])
            time.sleep(0.1)
        raise TimeoutError(f"no {self.api[3]} was created in {self.namespace}")

    def _pods(self, job: dict[str, Any], phase: str, names: list[str] | None = None) -> list[str]:
        name = job["metadata"]["name"]
        count = job["spec"]["trainer"]["numNodes"]
        if names is None:
            names = []
            for index in range(count):
                pod = client.V1Pod(
                    metadata=client.V1ObjectMeta(name=f"{name}-node-{index}", labels={JOB_LABEL: name}),
                    spec=client.V1PodSpec(containers=[client.V1Container(name="node", image="stand-in")]),
                )
                names.append(self.core.create_namespaced_pod(self.namespace, pod).metadata.name)
        for pod_name in names:
            self.core.patch_namespaced_pod_status(pod_name, self.namespace, {"status": {"phase": phase}})
        return names

    def _command(self, job: dict[str, Any]) -> tuple[list[str], int, dict[str, str]]:
        trainer = job["spec"]["trainer"]
        command, env = trainer["command"], trainer["env"]
        world = trainer["numNodes"] * trainer["numProcPerNode"]
        plain = {e["name"]: e["value"] for e in env if "value" in e}
        plain["MLOPS_METRICS_PORT"] = "0"  # several test jobs on one machine: no fixed port
        return command, world, plain

    def _play(self) -> None:
        job = self._wait_for_job()
        self.seen = job
        name = job["metadata"]["name"]
        self._status(name, [condition("Suspended", "Suspended", "waiting for Kueue admission")])
        self._hold("queued (suspended")
        self._status(name, [{**condition("Suspended", "Resumed"), "status": "False"}])
        pods = self._pods(job, "Pending")
        self._hold("pending")
        self._pods(job, "Running", pods)
        if self.outcome == "hang":
            return
        if self.outcome == "succeed":
            command, world, env = self._command(job)
            done = run_pod_command(command, world, env)
            self.pod_output = done.stdout + done.stderr
            succeeded = done.returncode == 0
        else:
            succeeded = False
        self._pods(job, "Succeeded" if succeeded else "Failed", pods)
        if succeeded:
            self._status(name, [condition("Complete", "JobsCompleted", "all pods succeeded")])
        else:
            self._status(name, [condition("Failed", FAILURE_REASON, "rank 0 exited with code 1")])


def install_crds(cluster: Any) -> None:
    """The projects' published CRDs (unmodified, CEL rules on), applied and established.

    Not the project's minimal ones (infra/k8s/crds, for the offline ``mlops cluster check``): those
    leave pod templates open, so a field the real schema lacks would be stored here and pruned there.
    """
    from tests.support.published_crds import install_published_crds

    install_published_crds(cluster)


def apply_team_rules(cluster: Any, namespace: str, overlay: str = "dev") -> list[dict[str, Any]]:
    """The overlay's own admission rules in ``namespace``: its team LimitRange, ResourceQuota and LocalQueue
    (moved there), and the cluster-wide PriorityClasses and Kueue queue they point at. The objects applied."""
    import yaml

    from cli.manifests import team_rules

    objs = team_rules(overlay, namespace)
    stream = yaml.safe_dump_all(objs, sort_keys=False)
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", stdin=stream)
    return objs
