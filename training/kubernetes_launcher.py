"""Kubernetes launcher: the training ranks run as a Kubeflow Trainer v2 TrainJob.

:class:`KubernetesLauncher` is a :class:`training.launcher.Launcher`. For one job it:

1. checks the plan (:func:`training.kubernetes_config.plan`: data residency, GPU-hour
   budget, ranks = ``nproc``), then the target namespace's LimitRange, ResourceQuota and
   Kueue ClusterQueue (:func:`training.kubernetes_admission.check_admission`) — a refusal
   leaves nothing behind, not even a staged file (nor does the API server's refusal of the
   job: the staged file is deleted then);
2. stages the pickled :class:`~training.loop.WorkerJob` under ``staging_uri/<job>/``
   through the one storage layer (``mlops.storage``) — its logger carries the task's
   tracking store (explicit URIs), the one way the pods learn where to log; rank 0 checkpoints every epoch to
   ``staging_uri/<job>/checkpoints/``, so pods the controller restarts resume there;
3. creates the job through the ``kubernetes`` client (never kubectl);
4. waits, reporting each change of state: ``queued`` (suspended by Kueue, with why its
   Workload waits, or no pods yet), ``pending`` (pods not all running), ``running``; the
   TrainJob API itself only says Suspended/Complete/Failed, so the pods (label
   ``mlops.platform/job``) tell the rest. The events the controllers write about the job
   (Kueue's, the Trainer's) are reported as they appear, and the first pod's log (rank 0's
   node) is streamed into the step's log line by line;
5. on failure raises :class:`TrainingJobFailed` with the controller's reason, the error a
   rank raised (``cause: DatasetError: …``) and the tail of the failed pods' logs; after
   ``queue_timeout_hours`` without starting, or ``time_limit_hours`` of running, raises
   :class:`TrainingJobTimeout`;
6. deletes the job (and so its pods) unless ``keep_job``, then reads rank 0's result.

The job's creation and its outcome are audit records (``training_job.created`` /
``training_job.finished``) in the task's trail.

Only TrainJobs: the Training Operator v1 ``PyTorchJob`` (``kubeflow.org/v1``) is the line Kubeflow
replaced with Trainer v2. The cluster tier runs the real Trainer v2, JobSet and Kueue controllers,
whereas a PyTorchJob was only ever checked against a stand-in controller, so keeping it would ship
an untested path; a cluster with only the Training Operator needs Trainer v2 (or ``launcher=local``).
"""

from __future__ import annotations

import os
import pickle
import re
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mlops import storage
from mlops.images import PLATFORM_IMAGE
from training.kubernetes_admission import check_admission
from training.kubernetes_config import JobPlan, KubernetesJobSettings, plan
from training.kubernetes_jobs import JOB_LABEL, TRAINJOB_API, trainjob
from training.launcher import JOB_FILE, RESULT_FILE, load_result
from training.loop import WorkerJob, WorkerResult

LOG_TAIL_LINES = 40
CHECKPOINTS = "checkpoints"
"""Folder under the job's staging URI where rank 0 uploads ``last.pt`` after every epoch."""


class TrainingJobFailed(RuntimeError):
    """The cluster reported the job failed; the message has its reason and the failed pods' logs."""


class TrainingJobTimeout(TimeoutError):
    """The job did not start within queue_timeout_hours, or ran past time_limit_hours."""


@dataclass(frozen=True)
class JobState:
    """What one status check saw."""

    phase: str
    """queued, pending, running, succeeded or failed."""
    detail: str = ""


def _condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind and cond.get("status") == "True":
            return dict(cond)
    return None


def job_state(obj: dict[str, Any], pods: list[Any], waiting: str = "") -> JobState:
    """The TrainJob's state from its conditions, refined by its pods' phases; ``waiting`` is why Kueue holds it."""
    if cond := _condition(obj, "Failed"):
        return JobState("failed", f"{cond.get('reason', '')}: {cond.get('message', '')}".strip(": "))
    if _condition(obj, "Complete"):
        return JobState("succeeded")
    suspended = _condition(obj, "Suspended") or (obj.get("spec") or {}).get("suspend") is True
    if suspended or not pods:
        held = "suspended, waiting for Kueue admission" + (f": {waiting}" if waiting else "")
        return JobState("queued", held if suspended else "no pods yet")
    phases = [p.status.phase or "Pending" for p in pods]
    if all(phase in ("Running", "Succeeded") for phase in phases):
        return JobState("running", f"{len(pods)} pod(s) running")
    return JobState("pending", f"{phases.count('Running')}/{len(pods)} pod(s) running")


KUEUE_WORKLOADS = ("kueue.x-k8s.io", "v1beta2", "workloads")
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
"""Kueue labels the Workload it makes for a job with the job's uid."""


def admission_wait(custom: Any, namespace: str, uid: str) -> str:
    """Why Kueue has not admitted the job: its Workload's ``QuotaReserved`` message (``insufficient quota
    for cpu in flavor …``), or "" where there is none (no Kueue, no Workload yet, or already admitted)."""
    from kubernetes.client import ApiException

    try:
        found = custom.list_namespaced_custom_object(
            *KUEUE_WORKLOADS[:2], namespace, KUEUE_WORKLOADS[2], label_selector=f"{JOB_UID_LABEL}={uid}"
        )["items"]
    except ApiException:
        return ""
    for workload in found:
        for cond in (workload.get("status") or {}).get("conditions") or []:
            if cond.get("type") == "QuotaReserved" and cond.get("status") == "False":
                return str(cond.get("message") or cond.get("reason") or "")
    return ""


class JobWatch:
    """What the launcher has already reported of a job's events and of its first pod's log."""

    def __init__(self, report: Callable[[str], None]) -> None:
        self.report = report
        self.events: set[str] = set()
        self.log_pod = ""
        self.log_lines = 0

    def new_events(self, core: Any, namespace: str, kind: str, name: str) -> None:
        """Report each event about the job not reported yet, oldest first."""
        selector = f"involvedObject.kind={kind},involvedObject.name={name}"
        try:
            items = core.list_namespaced_event(namespace, field_selector=selector).items
        except Exception:  # events are an aid: a cluster that refuses them must not fail the job
            return
        for event in sorted(items, key=lambda e: str(e.last_timestamp or e.event_time or "")):
            key = f"{event.metadata.uid}/{event.count}"
            if key in self.events:
                continue
            self.events.add(key)
            source = (
                event.reporting_component or (event.source.component if event.source else "") or "cluster"
            )
            self.report(f"{kind} {name} event from {source}: {event.reason}: {event.message}")

    def stream_log(self, core: Any, namespace: str, pods: list[Any]) -> None:
        """Report the first pod's log lines not reported yet; a pod that replaced it is followed from its start."""
        running = sorted(
            (p for p in pods if (p.status.phase or "") in ("Running", "Succeeded", "Failed")),
            key=lambda p: str(p.metadata.name),
        )
        if not running:
            return
        pod = running[0].metadata.name
        if pod != self.log_pod:
            self.log_pod, self.log_lines = pod, 0
        try:
            lines = str(core.read_namespaced_pod_log(pod, namespace)).splitlines()
        except Exception:  # not started on a node yet, or gone: the next poll tries again
            return
        for line in lines[self.log_lines :]:
            self.report(f"  {pod} | {line}")
        self.log_lines = max(self.log_lines, len(lines))


JOB_CREATED = "training_job.created"
JOB_FINISHED = "training_job.finished"


def _audit(action: str, subject: str, details: dict[str, str]) -> None:
    """A cluster job's creation and outcome go to the audit trail: the task's (its MLflow run's
    store) or ``MLOPS_AUDIT_URI``; a launcher used outside both has no trail to write to."""
    import mlflow

    from mlops.governance import audit

    if mlflow.active_run() is not None:
        audit.record_in_run(action, subject, details)
    elif os.environ.get(audit.AUDIT_URI_ENV):
        audit.record(action, subject, details)


_ERROR_LINE = re.compile(r"^(?:\[rank\d+\]:\s*)?([A-Za-z_][\w.]*(?:Error|Exception)): (.+)$")


def root_cause(logs: str) -> str | None:
    """The last ``SomethingError: message`` a rank printed, without torchrun's own wrapper errors."""
    for line in reversed(logs.splitlines()):
        match = _ERROR_LINE.match(line.strip())
        if match and not match.group(1).endswith("ChildFailedError"):
            return f"{match.group(1).rsplit('.', 1)[-1]}: {match.group(2)}"
    return None


def killed_containers(pods: list[Any]) -> str | None:
    """What the kubelet says ended a failed pod's container when its log cannot (an OOM kill leaves no
    traceback): ``OOMKilled`` with the container's memory limit, or another termination by signal."""
    for pod in pods:
        for status in (pod.status.container_statuses or []) if pod.status else []:
            for state in (status.state, status.last_state):
                ended = getattr(state, "terminated", None) if state is not None else None
                if ended is None:
                    continue
                where = f"container {status.name} of pod {pod.metadata.name}"
                if ended.reason == "OOMKilled":
                    limits = next(
                        (
                            c.resources.limits or {}
                            for c in pod.spec.containers
                            if c.name == status.name and c.resources
                        ),
                        {},
                    )
                    limit = f" at its memory limit {limits['memory']}" if "memory" in limits else ""
                    return (
                        f"OOMKilled: {where} ran out of memory{limit} (exit code {ended.exit_code}); raise "
                        "memory_per_worker or lower train.batch_size. A re-run resumes from the last checkpoint"
                    )
                if ended.exit_code is not None and ended.exit_code > 128:
                    return f"{where} was killed by signal {ended.exit_code - 128} ({ended.reason or 'no reason given'})"
    return None


class KubernetesLauncher:
    """Runs a :class:`WorkerJob` as a Kubeflow Trainer v2 TrainJob on a cluster."""

    def __init__(
        self,
        settings: KubernetesJobSettings,
        api_client: Any = None,
        report: Callable[[str], None] = print,
    ) -> None:
        self.settings, self.report = settings, report
        self._api_client = api_client

    def _apis(self) -> tuple[Any, Any]:
        from kubernetes import client, config

        if self._api_client is None:
            try:
                config.load_incluster_config()
            except config.ConfigException:
                config.load_kube_config()
            self._api_client = client.ApiClient()
        return client.CustomObjectsApi(self._api_client), client.CoreV1Api(self._api_client)

    def run(self, job: WorkerJob) -> WorkerResult:
        checked = plan(self.settings, job.config.nproc)  # refuses before anything exists
        custom, core = self._apis()
        # The namespace's LimitRange, ResourceQuota and Kueue queue: a job they can never admit is refused now.
        check_admission(checked, self._api_client, self.report)
        name = f"train-{uuid.uuid4().hex[:12]}"
        staging = f"{checked.settings.staging_uri}/{name}"
        # Pods keep no disk between attempts: checkpoints go next to the job, where a restarted pod finds them.
        staged = replace(
            job, result_path=None, checkpoint_dir=None, checkpoint_uri=f"{staging}/{CHECKPOINTS}"
        )
        storage.write_bytes(f"{staging}/{JOB_FILE}", pickle.dumps(staged))
        group, version, plural, _ = TRAINJOB_API
        body = trainjob(
            replace(checked, settings=checked.settings.model_copy(update={"staging_uri": staging})),
            name,
            self.image,
        )
        try:
            self._create(custom, checked.namespace, body)
        except TrainingJobFailed:
            storage.delete(f"{staging}/{JOB_FILE}")  # refused: nothing of the job may stay behind
            raise
        self.report(f"{body['kind']} {checked.namespace}/{name} created: {self._shape(checked)}")
        subject = f"{body['kind']}/{checked.namespace}/{name}"
        _audit(
            JOB_CREATED, subject, {"image": self.image, "shape": self._shape(checked), "staging_uri": staging}
        )
        try:
            self._wait(custom, core, checked, name)
        except (TrainingJobFailed, TrainingJobTimeout) as exc:
            _audit(JOB_FINISHED, subject, {"outcome": "failed", "reason": str(exc).splitlines()[0]})
            raise
        else:
            _audit(JOB_FINISHED, subject, {"outcome": "succeeded"})
        finally:
            if not self.settings.keep_job:
                custom.delete_namespaced_custom_object(
                    group, version, checked.namespace, plural, name, propagation_policy="Background"
                )
                self.report(f"{body['kind']} {checked.namespace}/{name} deleted")
        return self._result(staging)

    def _create(self, custom: Any, namespace: str, body: dict[str, Any]) -> None:
        """Create the job; a refusal says what the API server said and what usually fixes it."""
        from kubernetes.client import ApiException

        group, version, plural, kind = TRAINJOB_API
        try:
            custom.create_namespaced_custom_object(group, version, namespace, plural, body)
        except ApiException as exc:
            hints = {
                403: f"the train task's ServiceAccount may not create {plural}.{group} in {namespace!r}: run it "
                "as mlops-pipeline-runner (infra/k8s/base/team/rbac.yaml)",
                404: f"namespace {namespace!r} does not exist, or the cluster does not serve {plural}.{group}/"
                f"{version} (install Kubeflow Trainer v2; the Training Operator's PyTorchJob is not supported)",
            }
            reason = hints.get(exc.status, "the API server refused the object")
            raise TrainingJobFailed(
                f"cannot create the {kind}: {reason} ({exc.status} {exc.reason})"
            ) from None

    @property
    def image(self) -> str:
        return self.settings.training_image or PLATFORM_IMAGE

    def _shape(self, checked: JobPlan) -> str:
        s = checked.settings
        gpus = f"{s.gpus_per_worker} x {s.gpu_resource}" + (f" ({s.gpu_type})" if s.gpu_type else "")
        where = f", region {s.region}" if s.region else ""
        return f"{s.workers} worker(s) x {gpus if s.gpus_per_worker else 'CPU'}, queue {s.kueue_queue}{where}"

    def _wait(self, custom: Any, core: Any, checked: JobPlan, name: str) -> None:
        group, version, plural, kind = TRAINJOB_API
        s = checked.settings
        created = time.monotonic()
        started: float | None = None
        last: JobState | None = None
        watch = JobWatch(self.report)
        while True:
            obj = custom.get_namespaced_custom_object(group, version, checked.namespace, plural, name)
            pods = core.list_namespaced_pod(checked.namespace, label_selector=f"{JOB_LABEL}={name}").items
            held = (obj.get("spec") or {}).get("suspend") is True or _condition(obj, "Suspended")
            waiting = admission_wait(custom, checked.namespace, obj["metadata"]["uid"]) if held else ""
            state = job_state(obj, pods, waiting)
            watch.new_events(core, checked.namespace, kind, name)
            watch.stream_log(core, checked.namespace, pods)
            if state != last:
                self.report(f"{kind} {name}: {state.phase}" + (f" ({state.detail})" if state.detail else ""))
                last = state
            if state.phase == "succeeded":
                return
            if state.phase == "failed":
                logs = self._logs(core, checked.namespace, pods)
                cause = root_cause(logs) or killed_containers(pods)
                raise TrainingJobFailed(
                    f"{kind} {checked.namespace}/{name} failed: {state.detail or 'no reason given'}\n"
                    + (f"cause: {cause}\n" if cause else "")
                    + logs
                )
            now = time.monotonic()
            if state.phase == "running" and started is None:
                started = now
            grace = 2 * s.poll_interval_s
            if started is None and now - created > s.queue_timeout_hours * 3600:
                raise TrainingJobTimeout(
                    f"{kind} {checked.namespace}/{name} did not start within queue_timeout_hours="
                    f"{s.queue_timeout_hours:g} (last state: {state.phase} {state.detail}); check the queue "
                    f"{s.kueue_queue!r} (kubectl get workloads -n {checked.namespace})"
                )
            if started is not None and now - started > s.time_limit_hours * 3600 + grace:
                raise TrainingJobTimeout(
                    f"{kind} {checked.namespace}/{name} still {state.phase} after time_limit_hours="
                    f"{s.time_limit_hours:g}; raise time_limit_hours or train less\n"
                    + self._logs(core, checked.namespace, pods)
                )
            time.sleep(s.poll_interval_s)

    def _logs(self, core: Any, namespace: str, pods: list[Any]) -> str:
        """The last lines of each failed pod's log (of every pod when none is marked failed)."""
        failed = [p for p in pods if p.status.phase == "Failed"] or pods
        if not failed:
            return "no pods were created: nothing to show"
        parts = []
        for pod in failed:
            pod_name = pod.metadata.name
            try:
                text = core.read_namespaced_pod_log(pod_name, namespace, tail_lines=LOG_TAIL_LINES)
            except Exception as exc:  # a pod without a node has no log; say so rather than hide the failure
                text = f"(log unavailable: {getattr(exc, 'reason', None) or exc})"
            text = text.rstrip() or "(empty log: the container wrote nothing, or never started on a node)"
            parts.append(f"--- {pod_name} ({pod.status.phase}) ---\n{text}")
        return "\n".join(parts)

    def _result(self, staging: str) -> WorkerResult:
        uri = f"{staging}/{RESULT_FILE}"
        with tempfile.TemporaryDirectory(prefix="mlops-k8s-") as scratch:
            path = Path(scratch) / RESULT_FILE
            try:
                path.write_bytes(storage.read_bytes(uri))
            except storage.ObjectNotFound:
                raise TrainingJobFailed(
                    f"the job reported success but rank 0 left no result at {uri}; the pods' image may run "
                    "other code than this task's"
                ) from None
            return load_result(path)
