"""A planned job against a team namespace's real rules: the prod overlay's own LimitRange, ResourceQuota and Kueue queue.

The rules are the overlay's objects, applied to a real API server (published CRDs installed);
the launcher's check reads them through the API. Where the API server itself admits or refuses
(the LimitRange's defaulting of a container's limits), the test asks it with a server-side dry run.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from cli import manifests
from tests.services.kubernetes import KubeCluster
from tests.support.k8s_controller import install_crds
from training.kubernetes_admission import check_admission, queue_capacity
from training.kubernetes_config import ClusterPolicyError, KubernetesJobSettings, plan
from training.kubernetes_jobs import resources

TEAM = "team-risk"


@pytest.fixture(scope="module")
def team(kube_apiserver: KubeCluster) -> KubeCluster:
    """The prod overlay applied for real: team-risk carries its LimitRange, ResourceQuota and LocalQueue."""
    install_crds(kube_apiserver)
    objs = manifests.objects(manifests.render("prod"))
    for ns in [o["metadata"]["name"] for o in objs if o["kind"] == "Namespace"]:
        kube_apiserver.kubectl("create", "namespace", ns, check=False)
    kube_apiserver.kubectl(
        "apply", "--server-side", "--force-conflicts", "-f", "-", stdin=manifests.render("prod")
    )
    return kube_apiserver


def settings(**overrides: Any) -> KubernetesJobSettings:
    return KubernetesJobSettings(**{"namespace": TEAM, "staging_uri": "s3://mlops/jobs", **overrides})


def check(cluster: KubeCluster, reports: list[str] | None = None, **overrides: Any) -> None:
    s = settings(**overrides)
    checked = plan(s, s.workers * s.ranks_per_worker())
    check_admission(checked, cluster.api_client(), (reports if reports is not None else []).append)


def pod_dry_run(cluster: KubeCluster, requirements: dict[str, Any]) -> None:
    """Ask the API server to admit one pod with these resources in the team namespace (nothing is created)."""
    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name="sized"),
        spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="img", resources=requirements)]),
    )
    client.CoreV1Api(cluster.api_client()).create_namespaced_pod(TEAM, pod, dry_run="All")


def test_a_default_sized_worker_is_admitted_by_the_teams_limit_range(team: KubeCluster) -> None:
    checked = plan(settings(), 1)
    check_admission(checked, team.api_client(), print)
    pod_dry_run(team, resources(checked))  # requests and limits together: admitted as they are


def test_a_request_without_its_limit_is_what_the_limit_range_refuses(team: KubeCluster) -> None:
    # Why limits always go with requests: the LimitRange defaults a missing cpu limit to 1, under the request.
    with pytest.raises(ApiException) as refused:
        pod_dry_run(team, {"requests": {"cpu": "2", "memory": "8Gi"}, "limits": {"memory": "8Gi"}})
    assert refused.value.status == 422 and "must be less than or equal to cpu limit" in refused.value.body


def test_the_16_gpu_256gi_job_is_refused_naming_the_quota_and_the_figure(team: KubeCluster) -> None:
    with pytest.raises(ClusterPolicyError) as refused:
        check(team, workers=2, gpus_per_worker=8, memory_per_worker="128Gi")
    message = str(refused.value)
    assert (
        "the job could never be admitted in namespace 'team-risk': ResourceQuota team-risk/compute allows "
        "requests.nvidia.com/gpu=8 in the whole namespace; the job's requests of nvidia.com/gpu is 16 (2 pod(s))"
    ) in message, message
    assert "workers=2 x gpus_per_worker=8" in message


def test_the_same_job_on_one_worker_breaks_the_limit_range_first(team: KubeCluster) -> None:
    with pytest.raises(
        ClusterPolicyError,
        match=r"LimitRange team-risk/defaults caps a container's memory at max 128Gi; each worker pod's limit is 256Gi",
    ):
        check(team, workers=1, gpus_per_worker=16, memory_per_worker="256Gi")


@pytest.mark.parametrize(
    "memory, admitted", [("128Gi", True), ("131073Mi", False)], ids=["at-max", "just-over"]
)
def test_the_limit_range_max_at_its_edge(team: KubeCluster, memory: str, admitted: bool) -> None:
    if admitted:
        check(team, memory_per_worker=memory)
        return
    with pytest.raises(ClusterPolicyError, match=r"caps a container's memory at max 128Gi; .* is 131073Mi"):
        check(team, memory_per_worker=memory)


@pytest.mark.parametrize(
    "workers, gpus, admitted", [(1, 8, True), (2, 4, True), (3, 3, False)], ids=["8", "2x4", "9"]
)
def test_the_quota_gpus_at_their_edge(team: KubeCluster, workers: int, gpus: int, admitted: bool) -> None:
    if admitted:
        check(team, workers=workers, gpus_per_worker=gpus, memory_per_worker="16Gi")
        return
    with pytest.raises(ClusterPolicyError, match=r"requests.nvidia.com/gpu=8 .* is 9 \(3 pod\(s\)\)"):
        check(team, workers=workers, gpus_per_worker=gpus, memory_per_worker="16Gi")


def test_the_quota_pods_and_memory_totals(team: KubeCluster) -> None:
    check(team, workers=32, memory_per_worker="8Gi", cpu_per_worker="2")  # 256Gi, 64 cpu: at both edges
    with pytest.raises(ClusterPolicyError, match=r"allows requests.cpu=64 .* requests of cpu is 66 \(33 pod"):
        check(team, workers=33, memory_per_worker="7Gi", cpu_per_worker="2")
    with pytest.raises(
        ClusterPolicyError, match=r"allows (requests|limits).memory=256Gi .* is 264Gi \(33 pod"
    ):
        check(team, workers=33, memory_per_worker="8Gi", cpu_per_worker="1")


def test_a_resource_the_cluster_queue_does_not_cover_is_refused(team: KubeCluster) -> None:
    with pytest.raises(
        ClusterPolicyError,
        match=r"ClusterQueue mlops-training \(behind LocalQueue team-risk/training\) covers no nvidia.com/mig-2g.20gb",
    ):
        check(team, gpus_per_worker=1, gpu_resource="nvidia.com/mig-2g.20gb")


def test_a_missing_local_queue_is_refused(team: KubeCluster) -> None:
    with pytest.raises(ClusterPolicyError, match=r"has no Kueue LocalQueue 'nightly'"):
        check(team, kueue_queue="nightly")


QUEUE: dict[str, Any] = {"metadata": {"name": "q"}, "spec": {"resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [
    {"name": "a", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "4", "borrowingLimit": "2"}]},
    {"name": "b", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "5"}]},
]}]}}  # fmt: skip


def test_queue_capacity_is_the_largest_flavor_with_its_borrowing() -> None:
    assert queue_capacity(QUEUE, []) == {"nvidia.com/gpu": 6}
    in_cohort = {**QUEUE, "spec": {**QUEUE["spec"], "cohortName": "c"}}
    other = {"metadata": {"name": "o"}, "spec": {"cohortName": "c", "resourceGroups": [{"flavors": [
        {"name": "b", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "3"}]}]}]}}  # fmt: skip
    # Flavor b has no borrowing limit in a cohort: it may borrow the other queue's 3.
    assert queue_capacity(in_cohort, [other]) == {"nvidia.com/gpu": 8}


def test_the_prod_cluster_queue_gives_one_job_at_most_its_largest_gpu_flavor(team: KubeCluster) -> None:
    cq = client.CustomObjectsApi(team.api_client()).get_cluster_custom_object(
        "kueue.x-k8s.io", "v1beta2", "clusterqueues", "mlops-training"
    )
    assert queue_capacity(cq, [])["nvidia.com/gpu"] == 32  # h100-eu-central-1


def test_the_pipeline_account_reads_the_rules_and_says_what_it_could_not_check(team: KubeCluster) -> None:
    api = team.api_client()
    api.set_default_header("Impersonate-User", f"system:serviceaccount:{TEAM}:mlops-pipeline-runner")
    reports: list[str] = []
    check_admission(plan(settings(), 1), api, reports.append)
    # The Role reads the namespace's LimitRange, ResourceQuota and LocalQueue; ClusterQueues are cluster-wide.
    assert reports == [
        f"ClusterQueue quota not checked: reading the queue behind {TEAM}/training: refused (403 Forbidden)"
    ]
    with pytest.raises(
        ClusterPolicyError, match=r"ResourceQuota team-risk/compute allows requests.nvidia.com/gpu=8"
    ):
        check_admission(plan(settings(workers=2, gpus_per_worker=8), 16), api, reports.append)


def _as_model(obj: dict[str, Any], model: str) -> Any:
    """A rendered object as the typed model the client returns for it."""
    return client.ApiClient()._ApiClient__deserialize(obj, model)


def test_the_checks_read_the_overlays_own_rules_offline_too() -> None:
    from training.kubernetes_admission import check_limit_ranges, check_resource_quotas, pod_ask

    objs = [o for o in manifests.objects(manifests.render("prod")) if o["metadata"].get("namespace") == TEAM]
    (lr,) = [_as_model(o, "V1LimitRange") for o in objs if o["kind"] == "LimitRange"]
    (rq,) = [_as_model(o, "V1ResourceQuota") for o in objs if o["kind"] == "ResourceQuota"]
    fits = plan(settings(workers=1, gpus_per_worker=8, memory_per_worker="128Gi"), 8)
    check_limit_ranges(fits, pod_ask(fits), [lr])
    check_resource_quotas(fits, pod_ask(fits), [rq])
    big = plan(settings(workers=2, gpus_per_worker=8, memory_per_worker="128Gi"), 16)
    check_limit_ranges(big, pod_ask(big), [lr])
    with pytest.raises(ClusterPolicyError, match=r"allows requests.nvidia.com/gpu=8 .* is 16 \(2 pod\(s\)\)"):
        check_resource_quotas(big, pod_ask(big), [rq])
