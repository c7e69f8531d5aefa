"""What the launcher reports while a cluster job runs: the controllers' events, rank 0's log, Kueue's reason.

The objects are shaped as the ``kubernetes`` client returns them; the real controllers' own events and
logs reach these functions in tests/training/test_training_on_pods.py.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from kubernetes.client import ApiException

from training.kubernetes_launcher import JobWatch, admission_wait, job_state


def event(uid: str, reason: str, message: str, when: str, count: int = 1, component: str = "") -> Any:
    return SimpleNamespace(
        metadata=SimpleNamespace(uid=uid),
        count=count,
        reason=reason,
        message=message,
        last_timestamp=when,
        event_time=None,
        reporting_component=component,
        source=SimpleNamespace(component="kueue-admission"),
    )


def pod(name: str, phase: str) -> Any:
    return SimpleNamespace(metadata=SimpleNamespace(name=name), status=SimpleNamespace(phase=phase))


class Core:
    def __init__(self) -> None:
        self.events: list[Any] = []
        self.logs: dict[str, str] = {}
        self.selectors: list[str] = []

    def list_namespaced_event(self, namespace: str, field_selector: str) -> Any:
        self.selectors.append(field_selector)
        return SimpleNamespace(items=list(self.events))

    def read_namespaced_pod_log(self, name: str, namespace: str) -> str:
        if name not in self.logs:
            raise ApiException(status=400, reason="container is waiting to start")
        return self.logs[name]


def test_each_event_is_reported_once_oldest_first_and_again_when_it_recurs() -> None:
    reports: list[str] = []
    core, watch = Core(), JobWatch(reports.append)
    core.events = [
        event("b", "Started", "Admitted by clusterQueue mlops-training", "2026-01-01T00:00:02Z"),
        event(
            "a",
            "CreatedWorkload",
            "Created Workload: ns/trainjob-x",
            "2026-01-01T00:00:01Z",
            component="kueue",
        ),
    ]
    watch.new_events(core, "ns", "TrainJob", "x")
    watch.new_events(core, "ns", "TrainJob", "x")
    assert reports == [
        "TrainJob x event from kueue: CreatedWorkload: Created Workload: ns/trainjob-x",
        "TrainJob x event from kueue-admission: Started: Admitted by clusterQueue mlops-training",
    ]
    assert core.selectors[0] == "involvedObject.kind=TrainJob,involvedObject.name=x"
    core.events.append(event("b", "Started", "Admitted again", "2026-01-01T00:00:09Z", count=2))
    watch.new_events(core, "ns", "TrainJob", "x")
    assert reports[-1].endswith("Started: Admitted again") and len(reports) == 3


def test_an_event_list_the_cluster_refuses_reports_nothing_and_does_not_fail() -> None:
    class Refusing(Core):
        def list_namespaced_event(self, namespace: str, field_selector: str) -> Any:
            raise ApiException(status=403, reason="Forbidden")

    reports: list[str] = []
    JobWatch(reports.append).new_events(Refusing(), "ns", "TrainJob", "x")
    assert reports == []


def test_the_first_pods_log_is_streamed_line_by_line_and_a_replacement_from_its_start() -> None:
    reports: list[str] = []
    core, watch = Core(), JobWatch(reports.append)
    pods = [pod("job-node-0-1-b", "Running"), pod("job-node-0-0-a", "Running")]
    watch.stream_log(core, "ns", pods)  # no log yet: nothing, no error
    core.logs["job-node-0-0-a"] = "epoch 1\n"
    watch.stream_log(core, "ns", pods)
    core.logs["job-node-0-0-a"] = "epoch 1\nepoch 2\n"
    watch.stream_log(core, "ns", pods)
    assert reports == ["  job-node-0-0-a | epoch 1", "  job-node-0-0-a | epoch 2"]
    # The group restarted: a new first pod, whose log starts over.
    core.logs["job-node-0-0-c"] = "resumed from epoch 2\n"
    watch.stream_log(core, "ns", [pod("job-node-0-0-c", "Running"), pod("job-node-0-1-d", "Pending")])
    assert reports[-1] == "  job-node-0-0-c | resumed from epoch 2"


def test_pending_pods_have_no_log_to_stream() -> None:
    reports: list[str] = []
    core = Core()
    core.logs["p"] = "never read"
    JobWatch(reports.append).stream_log(core, "ns", [pod("p", "Pending")])
    assert reports == []


class Custom:
    def __init__(self, workloads: list[dict[str, Any]] | None = None, status: int = 0) -> None:
        self.workloads, self.status, self.selectors = workloads or [], status, []

    def list_namespaced_custom_object(
        self, group: str, version: str, ns: str, plural: str, label_selector: str
    ) -> Any:
        self.selectors.append((group, version, plural, label_selector))
        if self.status:
            raise ApiException(status=self.status, reason="not found")
        return {"items": self.workloads}


def condition(kind: str, status: str, message: str) -> dict[str, str]:
    return {"type": kind, "status": status, "reason": "Pending", "message": message}


def test_kueues_reason_for_holding_the_job_is_its_workloads_quota_message() -> None:
    held = (
        "couldn't assign flavors to pod set node: insufficient unused quota for cpu in flavor cpu-eu-west-1"
    )
    custom = Custom([{"status": {"conditions": [condition("QuotaReserved", "False", held)]}}])
    assert admission_wait(custom, "team", "uid-1") == held
    assert custom.selectors == [("kueue.x-k8s.io", "v1beta2", "workloads", "kueue.x-k8s.io/job-uid=uid-1")]
    state = job_state({"spec": {"suspend": True}}, [], admission_wait(custom, "team", "uid-1"))
    assert state.detail == f"suspended, waiting for Kueue admission: {held}"


def test_an_admitted_workload_no_workload_or_no_kueue_give_no_reason() -> None:
    reserved = Custom([{"status": {"conditions": [condition("QuotaReserved", "True", "Quota reserved")]}}])
    assert admission_wait(reserved, "team", "u") == ""
    assert admission_wait(Custom([]), "team", "u") == ""
    assert admission_wait(Custom(status=404), "team", "u") == ""
    state = job_state({"spec": {"suspend": True}}, [], "")
    assert state.detail == "suspended, waiting for Kueue admission"


def test_the_trainjobs_own_conditions_end_it_and_its_pods_tell_the_rest() -> None:
    """TrainJob says Complete or Failed; a ``Succeeded`` condition (another API's word) ends nothing."""
    running = [pod("t-node-0", "Running"), pod("t-node-1", "Running")]

    def status(kind: str, reason: str = "", message: str = "") -> dict[str, Any]:
        return {
            "status": {"conditions": [{"type": kind, "status": "True", "reason": reason, "message": message}]}
        }

    assert job_state(status("Complete"), running).phase == "succeeded"
    failed = job_state(status("Failed", "BackoffLimitExceeded", "node 1 exited 1"), running)
    assert (failed.phase, failed.detail) == ("failed", "BackoffLimitExceeded: node 1 exited 1")
    assert job_state(status("Succeeded"), running) == job_state({}, running)
    assert job_state({}, running).phase == "running"
    assert (
        job_state({}, [pod("t-node-0", "Running"), pod("t-node-1", "Pending")]).detail == "1/2 pod(s) running"
    )
    assert job_state({}, []).detail == "no pods yet"
