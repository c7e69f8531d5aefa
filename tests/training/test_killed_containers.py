"""A worker container the kubelet OOM-killed leaves no traceback in its log: the launcher's failure names the
OOM kill and the memory limit from the pod's status instead (the kubernetes client's own models, shaped as
the kubelet reports an OOM kill: reason OOMKilled, exit code 137)."""

from __future__ import annotations

from kubernetes import client

from training.kubernetes_launcher import killed_containers


def pod(
    name: str, *, terminated: client.V1ContainerStateTerminated | None, last: bool = False
) -> client.V1Pod:
    state = client.V1ContainerState(terminated=terminated)
    status = client.V1ContainerStatus(
        name="trainer",
        image="img",
        image_id="",
        ready=False,
        restart_count=1,
        state=client.V1ContainerState(waiting=client.V1ContainerStateWaiting(reason="CrashLoopBackOff"))
        if last
        else state,
        last_state=state if last else None,
    )
    container = client.V1Container(
        name="trainer",
        image="img",
        resources=client.V1ResourceRequirements(limits={"memory": "2Gi", "cpu": "1"}),
    )
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1PodSpec(containers=[container]),
        status=client.V1PodStatus(phase="Failed", container_statuses=[status]),
    )


def oom() -> client.V1ContainerStateTerminated:
    return client.V1ContainerStateTerminated(exit_code=137, reason="OOMKilled")


def test_an_oom_killed_container_is_named_with_its_memory_limit() -> None:
    said = killed_containers([pod("job-node-0-0", terminated=None), pod("job-node-1-0", terminated=oom())])
    assert said is not None and said.startswith(
        "OOMKilled: container trainer of pod job-node-1-0 ran out of memory"
    )
    assert "at its memory limit 2Gi (exit code 137)" in said and "raise memory_per_worker" in said


def test_an_oom_kill_in_the_previous_attempt_counts_too() -> None:
    said = killed_containers([pod("job-node-0-0", terminated=oom(), last=True)])
    assert said is not None and said.startswith("OOMKilled: container trainer of pod job-node-0-0")


def test_a_kill_by_another_signal_is_named_as_such() -> None:
    sigkill = client.V1ContainerStateTerminated(exit_code=137, reason="Error")
    assert (
        killed_containers([pod("p", terminated=sigkill)])
        == "container trainer of pod p was killed by signal 9 (Error)"
    )


def test_an_ordinary_failure_is_left_to_the_log() -> None:
    failed = client.V1ContainerStateTerminated(exit_code=1, reason="Error")
    assert killed_containers([pod("p", terminated=failed)]) is None
    assert (
        killed_containers(
            [pod("p", terminated=client.V1ContainerStateTerminated(exit_code=128, reason="Error"))]
        )
        is None
    )
    assert killed_containers([]) is None
