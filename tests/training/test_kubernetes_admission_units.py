"""The admission checks at their edges, in-process (mutation testing): LimitRange max and min,
ResourceQuota entries and totals, the ClusterQueue's largest flavor with borrowing, and the figures each
refusal names. The same rules read from a real API server are in test_kubernetes_admission.py."""

from __future__ import annotations

from decimal import Decimal
from types import SimpleNamespace
from typing import Any

import pytest

from training.kubernetes_admission import (
    PodAsk,
    _fmt,
    _quota_total,
    check_cluster_queue,
    check_limit_ranges,
    check_resource_quotas,
    pod_ask,
    queue_capacity,
)
from training.kubernetes_config import ClusterPolicyError, KubernetesJobSettings, plan

NS = "team-a"


def job(**overrides: Any) -> Any:
    s = KubernetesJobSettings(**{"namespace": NS, "staging_uri": "s3://b/jobs", **overrides})
    return plan(s, s.workers * s.ranks_per_worker())


def limit_range(
    kind: str = "Container", max_: dict[str, str] | None = None, min_: dict[str, str] | None = None
) -> Any:
    item = SimpleNamespace(type=kind, max=max_, min=min_)
    return SimpleNamespace(metadata=SimpleNamespace(name="limits"), spec=SimpleNamespace(limits=[item]))


def quota(hard: dict[str, str]) -> Any:
    return SimpleNamespace(metadata=SimpleNamespace(name="compute"), spec=SimpleNamespace(hard=hard))


def cluster_queue(
    resources: list[dict[str, Any]], cohort: str = "", covered: list[str] | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "resourceGroups": [
            {
                "coveredResources": covered or [r["name"] for r in resources],
                "flavors": [{"name": "f", "resources": resources}],
            }
        ]
    }
    if cohort:
        spec["cohortName"] = cohort
    return {"metadata": {"name": "cq"}, "spec": spec}


def test_the_pod_ask_is_what_each_worker_container_carries() -> None:
    ask = pod_ask(job(workers=3, cpu_per_worker="1500m", memory_per_worker="3Gi"))
    assert ask.pods == 3
    assert ask.requests["cpu"] == Decimal("1.5") and ask.limits["memory"] == Decimal(3 * 2**30)
    assert ask.total("requests", "cpu") == Decimal("4.5") and ask.total("limits", "nvidia.com/gpu") == 0


@pytest.mark.parametrize(("cap", "refused"), [("2Gi", False), ("2047Mi", True)])
def test_a_limit_range_max_at_its_edge(cap: str, refused: bool) -> None:
    checked = job(memory_per_worker="2Gi")
    rules = [limit_range(max_={"memory": cap})]
    if not refused:
        check_limit_ranges(checked, pod_ask(checked), rules)
        return
    with pytest.raises(ClusterPolicyError) as err:
        check_limit_ranges(checked, pod_ask(checked), rules)
    message = str(err.value)
    assert (
        f"LimitRange {NS}/limits caps a container's memory at max 2047Mi; each worker pod's limit is 2Gi"
        in message
    )
    assert message.startswith(f"the job could never be admitted in namespace '{NS}'")
    assert "memory_per_worker=2Gi" in message


@pytest.mark.parametrize(("floor", "refused"), [("1", False), ("1001m", True)])
def test_a_limit_range_min_at_its_edge(floor: str, refused: bool) -> None:
    checked = job(cpu_per_worker="1")
    rules = [limit_range("Pod", min_={"cpu": floor})]
    if not refused:
        check_limit_ranges(checked, pod_ask(checked), rules)
        return
    with pytest.raises(
        ClusterPolicyError,
        match=r"requires a pod's cpu of at least min 1001m; each worker pod's request is 1\b",
    ):
        check_limit_ranges(checked, pod_ask(checked), rules)


def test_other_limit_range_kinds_and_unasked_resources_are_not_compared() -> None:
    checked = job(memory_per_worker="4Gi")
    ask = pod_ask(checked)
    check_limit_ranges(checked, ask, [limit_range("PersistentVolumeClaim", max_={"memory": "1Mi"})])
    check_limit_ranges(
        checked, ask, [limit_range(max_={"nvidia.com/gpu": "0"}, min_={"nvidia.com/gpu": "1"})]
    )


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("pods", ("pods", Decimal(2))),
        ("requests.cpu", ("requests of cpu", Decimal(2))),
        ("cpu", ("requests of cpu", Decimal(2))),
        ("memory", ("requests of memory", Decimal(2 * 2**30))),
        ("limits.memory", ("limits of memory", Decimal(2 * 2**30))),
        ("requests.nvidia.com/gpu", ("requests of nvidia.com/gpu", Decimal(0))),
        ("count/jobs.batch", None),
        ("services", None),
    ],
)
def test_what_each_quota_entry_counts(key: str, expected: tuple[str, Decimal] | None) -> None:
    ask = PodAsk({"cpu": Decimal(1), "memory": Decimal(2**30)}, {"memory": Decimal(2**30)}, 2)
    assert _quota_total(ask, key) == expected


@pytest.mark.parametrize(("hard", "refused"), [("4", False), ("3", True)])
def test_a_quota_total_at_its_edge(hard: str, refused: bool) -> None:
    checked = job(workers=2, cpu_per_worker="2")  # 2 pods x 2 cpu = 4
    rules = [quota({"requests.cpu": hard, "count/jobs.batch": "0"})]
    if not refused:
        check_resource_quotas(checked, pod_ask(checked), rules)
        return
    with pytest.raises(ClusterPolicyError) as err:
        check_resource_quotas(checked, pod_ask(checked), rules)
    assert (
        f"ResourceQuota {NS}/compute allows requests.cpu=3 in the whole namespace; the job's requests of cpu is 4 (2 pod(s))"
        in str(err.value)
    )


def test_a_quota_without_hard_entries_refuses_nothing() -> None:
    checked = job()
    check_resource_quotas(
        checked, pod_ask(checked), [SimpleNamespace(metadata=SimpleNamespace(name="q"), spec=None)]
    )
    check_resource_quotas(checked, pod_ask(checked), [quota({})])


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (Decimal(2**30), "1Gi"),
        (Decimal(3 * 2**40), "3Ti"),
        (Decimal(5 * 2**20), "5Mi"),
        (Decimal(2**10), "1Ki"),
        (Decimal(2**30 + 1), "1073741825"),
        (Decimal(1023), "1023"),
        (Decimal("1.5"), "1500m"),
        (Decimal(4), "4"),
    ],
)
def test_quantities_are_written_as_people_write_them(value: Decimal, text: str) -> None:
    assert _fmt(value) == text


def test_queue_capacity_takes_the_largest_flavor_and_its_borrowing() -> None:
    cq = cluster_queue(
        [
            {"name": "cpu", "nominalQuota": "8", "borrowingLimit": "4"},
            {"name": "memory", "nominalQuota": "16Gi"},
        ]
    )
    cq["spec"]["resourceGroups"][0]["flavors"].append(
        {"name": "g", "resources": [{"name": "cpu", "nominalQuota": "10"}]}
    )
    assert queue_capacity(cq, []) == {"cpu": Decimal(12), "memory": Decimal(16 * 2**30)}


def test_a_cohort_without_a_borrowing_limit_can_borrow_the_members_nominal_quota() -> None:
    cq = cluster_queue([{"name": "cpu", "nominalQuota": "4"}], cohort="shared")
    member = cluster_queue([{"name": "cpu", "nominalQuota": "6"}, {"name": "memory", "nominalQuota": "1Gi"}])
    other_flavor = {
        "metadata": {"name": "x"},
        "spec": {
            "resourceGroups": [
                {"flavors": [{"name": "other", "resources": [{"name": "cpu", "nominalQuota": "100"}]}]}
            ]
        },
    }
    assert queue_capacity(cq, [member, other_flavor]) == {"cpu": Decimal(10)}
    assert queue_capacity(cluster_queue([{"name": "cpu", "nominalQuota": "4"}]), [member]) == {
        "cpu": Decimal(4)
    }


def test_a_covered_resource_without_a_flavor_quota_gives_nothing() -> None:
    assert queue_capacity(
        cluster_queue([{"name": "cpu", "nominalQuota": "4"}], covered=["cpu", "nvidia.com/gpu"]), []
    ) == {
        "cpu": Decimal(4),
        "nvidia.com/gpu": Decimal(0),
    }


@pytest.mark.parametrize(("nominal", "refused"), [("4", False), ("3999m", True)])
def test_the_cluster_queue_at_its_edge(nominal: str, refused: bool) -> None:
    checked = job(workers=2, cpu_per_worker="2", memory_per_worker="1Gi")
    cq = cluster_queue([{"name": "cpu", "nominalQuota": nominal}, {"name": "memory", "nominalQuota": "2Gi"}])
    if not refused:
        check_cluster_queue(checked, pod_ask(checked), cq, [])
        return
    with pytest.raises(ClusterPolicyError) as err:
        check_cluster_queue(checked, pod_ask(checked), cq, [])
    assert "ClusterQueue cq (behind LocalQueue team-a/" in str(err.value)
    assert (
        "can give at most 3999m cpu to one job (largest flavor quota, borrowing included); the job requests 4"
        in str(err.value)
    )


def test_a_resource_the_queue_does_not_cover_is_named() -> None:
    checked = job(cpu_per_worker="1", memory_per_worker="1Gi")
    with pytest.raises(ClusterPolicyError, match=r"covers no memory; the job requests 1Gi"):
        check_cluster_queue(
            checked, pod_ask(checked), cluster_queue([{"name": "cpu", "nominalQuota": "8"}]), []
        )


# --- what a refusal says, and the rules' less common shapes --------------------------------------------------

FIX = (
    "make the job smaller (workers, gpus_per_worker, cpu_per_worker, memory_per_worker) or ask the cluster's "
    "administrators to raise the rule"
)


def test_a_refusal_names_the_jobs_shape_and_the_fix() -> None:
    checked = job(workers=2, cpu_per_worker="2", memory_per_worker="1Gi")
    with pytest.raises(ClusterPolicyError) as err:
        check_resource_quotas(checked, pod_ask(checked), [quota({"pods": "1"})])
    assert str(err.value).endswith(f"(workers=2, cpu_per_worker=2, memory_per_worker=1Gi); {FIX}")
    gpu = job(workers=2, gpus_per_worker=4, cpu_per_worker="2", memory_per_worker="1Gi")
    with pytest.raises(ClusterPolicyError) as err:
        check_resource_quotas(gpu, pod_ask(gpu), [quota({"requests.nvidia.com/gpu": "4"})])
    assert "(workers=2 x gpus_per_worker=4, cpu_per_worker=2, memory_per_worker=1Gi)" in str(err.value)


def test_every_limit_range_item_and_every_quota_entry_is_read_not_only_the_first() -> None:
    checked = job(memory_per_worker="2Gi")
    pvc = SimpleNamespace(type="PersistentVolumeClaim", max={"storage": "1Gi"}, min=None)
    container = SimpleNamespace(type="Container", max={"memory": "1Gi"}, min=None)
    rules = [
        SimpleNamespace(
            metadata=SimpleNamespace(name="limits"), spec=SimpleNamespace(limits=[pvc, container])
        )
    ]
    with pytest.raises(ClusterPolicyError, match="caps a container's memory at max 1Gi"):
        check_limit_ranges(checked, pod_ask(checked), rules)
    with pytest.raises(ClusterPolicyError, match="allows pods=0"):
        check_resource_quotas(
            checked, pod_ask(checked), [quota({"services": "0", "count/jobs.batch": "0", "pods": "0"})]
        )


def test_a_request_over_the_max_is_named_as_the_request() -> None:
    checked = job()
    ask = PodAsk({"memory": Decimal(3 * 2**30)}, {}, 1)
    with pytest.raises(
        ClusterPolicyError,
        match=r"LimitRange team-a/limits caps a container's memory at max 2Gi; each worker pod's request is 3Gi",
    ):
        check_limit_ranges(checked, ask, [limit_range(max_={"memory": "2Gi"})])
    with pytest.raises(
        ClusterPolicyError, match=r"LimitRange team-a/limits requires a container's cpu of at least"
    ):
        check_limit_ranges(checked, PodAsk({"cpu": Decimal("0.1")}, {}, 1), [limit_range(min_={"cpu": "1"})])


def test_the_queue_compares_requests_not_limits() -> None:
    checked = job()
    cq = cluster_queue([{"name": "cpu", "nominalQuota": "2"}])
    check_cluster_queue(checked, PodAsk({"cpu": Decimal(2)}, {"cpu": Decimal(8)}, 1), cq, [])
    with pytest.raises(
        ClusterPolicyError, match=r"ClusterQueue cq \(behind LocalQueue team-a/\S+\) covers no memory"
    ):
        check_cluster_queue(checked, PodAsk({"memory": Decimal(1)}, {}, 1), cq, [])


def test_limits_entries_count_limits() -> None:
    ask = PodAsk({"memory": Decimal(2**30)}, {"memory": Decimal(3 * 2**30)}, 2)
    assert _quota_total(ask, "limits.memory") == ("limits of memory", Decimal(6 * 2**30))
    assert _quota_total(ask, "requests.memory") == ("requests of memory", Decimal(2 * 2**30))
    assert _quota_total(ask, "ephemeral-storage") == ("requests of ephemeral-storage", Decimal(0))


def test_the_older_cohort_field_and_missing_quotas() -> None:
    old = cluster_queue([{"name": "cpu", "nominalQuota": "4"}])
    old["spec"]["cohort"] = "shared"  # Kueue v1beta1's field name
    assert queue_capacity(old, [cluster_queue([{"name": "cpu", "nominalQuota": "3"}])]) == {"cpu": Decimal(7)}
    current = cluster_queue([{"name": "cpu", "nominalQuota": "4"}], cohort="shared")
    no_quota = cluster_queue([{"name": "cpu"}, {"name": "memory", "nominalQuota": "1Gi"}])
    assert queue_capacity(current, [no_quota]) == {
        "cpu": Decimal(4)
    }  # a member entry without a quota lends 0
    borrowing_only = cluster_queue(
        [{"name": "cpu", "borrowingLimit": "2"}, {"name": "memory", "nominalQuota": "0"}]
    )
    assert queue_capacity(borrowing_only, []) == {"cpu": Decimal(2), "memory": Decimal(0)}
    checked = job(cpu_per_worker="1", memory_per_worker="1Gi")
    cohort = cluster_queue(
        [{"name": "cpu", "nominalQuota": "0"}, {"name": "memory", "nominalQuota": "1Gi"}], cohort="c"
    )
    lender = cluster_queue([{"name": "cpu", "nominalQuota": "1"}])
    check_cluster_queue(checked, pod_ask(checked), cohort, [lender])
