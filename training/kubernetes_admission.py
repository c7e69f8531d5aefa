"""A planned job against the target namespace's real admission rules, before anything is submitted.

:func:`training.kubernetes_config.plan` checks the platform's own policy (residency, budget,
shape). A job can pass it and still never run: the namespace's LimitRange caps what one
container may ask, its ResourceQuota caps the namespace's total, and Kueue's ClusterQueue
(behind the namespace's LocalQueue) caps what it admits; a job over any of these waits in the
queue until ``queue_timeout_hours`` or is refused pod by pod. :func:`check_admission` reads
those objects through the API (the ServiceAccount's Role grants reading them) and refuses such
a job naming the rule (kind/namespace/name, field, resource) and the figures. Figures are
compared as Kubernetes quantities (``kubernetes.utils.parse_quantity``).

What is compared: per container (one per pod), the request and limit against the LimitRange's
``max`` and ``min`` (type Container and Pod); the job's totals (pods x per-pod) against every
``hard`` entry of every ResourceQuota (``requests.X`` and plain ``X``, ``limits.X``, ``pods``) —
its hard limit, not what is left, so a busy namespace is waited for, never refused; the per-pod
request x pods against the largest quota one flavor of the ClusterQueue offers for the resource
(``nominalQuota`` plus ``borrowingLimit``; in a cohort with no borrowing limit, plus what the cohort's
other queues hold of that flavor). A ClusterQueue the account may not read is reported, not guessed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from kubernetes.utils import parse_quantity

from training.kubernetes_config import ClusterPolicyError, JobPlan
from training.kubernetes_jobs import resources

KUEUE = ("kueue.x-k8s.io", "v1beta2")


@dataclass(frozen=True)
class PodAsk:
    """What one pod of the job requests and is limited to, and how many pods there are."""

    requests: dict[str, Decimal]
    limits: dict[str, Decimal]
    pods: int

    def total(self, kind: str, resource: str) -> Decimal:
        """The job's total of ``requests`` or ``limits`` for ``resource``."""
        figures = self.requests if kind == "requests" else self.limits
        return figures.get(resource, Decimal(0)) * self.pods


def pod_ask(plan: JobPlan) -> PodAsk:
    """The per-pod requests and limits the launcher's job will carry (one container per pod)."""
    spec = resources(plan)
    requests = {k: parse_quantity(v) for k, v in (spec.requests or {}).items()}
    limits = {k: parse_quantity(v) for k, v in (spec.limits or {}).items()}
    return PodAsk(requests, limits, plan.settings.workers)


def _fmt(value: Decimal) -> str:
    """A quantity as people write it: binary units for whole Ki/Mi/Gi/Ti, else the plain number."""
    for unit, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if value >= size and value % size == 0:
            return f"{value // size}{unit}"
    if value != value.to_integral_value():
        return f"{(value * 1000).normalize():f}m"
    return f"{value.normalize():f}"


def _shape(plan: JobPlan) -> str:
    s = plan.settings
    gpus = f" x gpus_per_worker={s.gpus_per_worker}" if s.gpus_per_worker else ""
    return f"workers={s.workers}{gpus}, cpu_per_worker={s.cpu_per_worker}, memory_per_worker={s.memory_per_worker}"


def _refuse(plan: JobPlan, rule: str, detail: str) -> ClusterPolicyError:
    return ClusterPolicyError(
        f"the job could never be admitted in namespace {plan.namespace!r}: {rule} {detail} ({_shape(plan)}); "
        "make the job smaller (workers, gpus_per_worker, cpu_per_worker, memory_per_worker) or ask the "
        "cluster's administrators to raise the rule"
    )


def check_limit_ranges(plan: JobPlan, ask: PodAsk, limit_ranges: list[Any]) -> None:
    """Refuse a container over a LimitRange ``max`` (or under its ``min``)."""
    for lr in limit_ranges:
        name = f"LimitRange {plan.namespace}/{lr.metadata.name}"
        for item in lr.spec.limits or []:
            if item.type not in ("Container", "Pod"):
                continue
            for resource, bound in (item.max or {}).items():
                cap = parse_quantity(bound)
                for kind, figures in (("limit", ask.limits), ("request", ask.requests)):
                    if resource in figures and figures[resource] > cap:
                        raise _refuse(
                            plan,
                            name,
                            f"caps a {item.type.lower()}'s {resource} at max {bound}; each worker pod's "
                            f"{kind} is {_fmt(figures[resource])}",
                        )
            for resource, bound in (item.min or {}).items():
                floor = parse_quantity(bound)
                if resource in ask.requests and ask.requests[resource] < floor:
                    raise _refuse(
                        plan,
                        name,
                        f"requires a {item.type.lower()}'s {resource} of at least min {bound}; each worker "
                        f"pod's request is {_fmt(ask.requests[resource])}",
                    )


def _quota_total(ask: PodAsk, key: str) -> tuple[str, Decimal] | None:
    """What the job counts against the ResourceQuota entry ``key`` (None: an entry the job does not use)."""
    if key == "pods":
        return "pods", Decimal(ask.pods)
    if key.startswith("limits."):
        resource = key.removeprefix("limits.")
        return f"limits of {resource}", ask.total("limits", resource)
    resource = key.removeprefix("requests.")
    if key.startswith("requests.") or resource in ("cpu", "memory", "ephemeral-storage"):
        return f"requests of {resource}", ask.total("requests", resource)
    return None


def check_resource_quotas(plan: JobPlan, ask: PodAsk, quotas: list[Any]) -> None:
    """Refuse a job whose total exceeds a ResourceQuota's ``hard`` limit (its hard limit, not what is free)."""
    for quota in quotas:
        name = f"ResourceQuota {plan.namespace}/{quota.metadata.name}"
        for key, bound in ((quota.spec.hard or {}) if quota.spec else {}).items():
            counted = _quota_total(ask, key)
            if counted is None:
                continue
            what, total = counted
            if total > parse_quantity(bound):
                raise _refuse(
                    plan,
                    name,
                    f"allows {key}={bound} in the whole namespace; the job's {what} is {_fmt(total)} "
                    f"({ask.pods} pod(s))",
                )


def queue_capacity(
    cluster_queue: dict[str, Any], cohort_members: list[dict[str, Any]]
) -> dict[str, Decimal | None]:
    """Per resource, the most one flavor of ``cluster_queue`` can give a job, borrowing included (the cohort's
    other queues' nominal quota of that flavor when no ``borrowingLimit`` is set). Never None today; the
    type keeps room for a queue whose borrowing has no bound."""
    cohort = (cluster_queue.get("spec") or {}).get("cohortName") or (cluster_queue.get("spec") or {}).get(
        "cohort"
    )
    out: dict[str, Decimal | None] = {}
    for group in (cluster_queue.get("spec") or {}).get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            for item in flavor.get("resources") or []:
                nominal = parse_quantity(item.get("nominalQuota", 0))
                borrowing = item.get("borrowingLimit")
                cap: Decimal | None
                if borrowing is not None:
                    cap = nominal + parse_quantity(borrowing)
                elif cohort:
                    cap = nominal + sum(
                        (_nominal(member, flavor["name"], item["name"]) for member in cohort_members),
                        Decimal(0),
                    )
                else:
                    cap = nominal
                best = out.get(item["name"], Decimal(0))
                out[item["name"]] = None if best is None or cap is None else max(best, cap)
        for resource in group.get("coveredResources") or []:
            out.setdefault(resource, Decimal(0))
    return out


def _nominal(cluster_queue: dict[str, Any], flavor: str, resource: str) -> Decimal:
    for group in (cluster_queue.get("spec") or {}).get("resourceGroups") or []:
        for f in group.get("flavors") or []:
            if f.get("name") == flavor:
                for item in f.get("resources") or []:
                    if item.get("name") == resource:
                        return parse_quantity(item.get("nominalQuota", 0))
    return Decimal(0)


def check_cluster_queue(
    plan: JobPlan, ask: PodAsk, cluster_queue: dict[str, Any], cohort_members: list[dict[str, Any]]
) -> None:
    """Refuse a job that asks a resource the ClusterQueue does not cover, or more than one flavor of it can give."""
    name = f"ClusterQueue {cluster_queue['metadata']['name']}"
    capacity = queue_capacity(cluster_queue, cohort_members)
    for resource in ask.requests:
        total = ask.total("requests", resource)
        if resource not in capacity:
            raise _refuse(
                plan,
                name,
                f"(behind LocalQueue {plan.namespace}/{plan.settings.kueue_queue}) covers no {resource}; the job "
                f"requests {_fmt(total)}",
            )
        cap = capacity[resource]
        if cap is not None and total > cap:
            raise _refuse(
                plan,
                name,
                f"(behind LocalQueue {plan.namespace}/{plan.settings.kueue_queue}) can give at most "
                f"{_fmt(cap)} {resource} to one job (largest flavor quota, borrowing included); the job "
                f"requests {_fmt(total)}",
            )


def check_admission(plan: JobPlan, api_client: Any, report: Callable[[str], None] = print) -> None:
    """Read the namespace's LimitRanges, ResourceQuotas and Kueue queue; refuse a job that can never be admitted."""
    from kubernetes import client
    from kubernetes.client import ApiException

    core, custom = client.CoreV1Api(api_client), client.CustomObjectsApi(api_client)
    ask = pod_ask(plan)
    try:
        limit_ranges = core.list_namespaced_limit_range(plan.namespace).items
        quotas = core.list_namespaced_resource_quota(plan.namespace).items
    except ApiException as exc:
        raise ClusterPolicyError(
            f"cannot read the LimitRanges and ResourceQuotas of namespace {plan.namespace!r} to check the job "
            f"before submitting it ({exc.status} {exc.reason}); the train task's ServiceAccount needs to read "
            "them (mlops-pipeline-runner in infra/k8s/base/team/rbac.yaml)"
        ) from None
    check_limit_ranges(plan, ask, limit_ranges)
    check_resource_quotas(plan, ask, quotas)
    queue = plan.settings.kueue_queue
    try:
        local = custom.get_namespaced_custom_object(*KUEUE, plan.namespace, "localqueues", queue)
        cq = custom.get_cluster_custom_object(*KUEUE, "clusterqueues", local["spec"]["clusterQueue"])
        cohort = (cq.get("spec") or {}).get("cohortName")
        members = []
        if cohort:
            members = [
                other
                for other in custom.list_cluster_custom_object(*KUEUE, "clusterqueues")["items"]
                if (other.get("spec") or {}).get("cohortName") == cohort
                and other["metadata"]["name"] != cq["metadata"]["name"]
            ]
    except ApiException as exc:
        if exc.status == 404 and _serves_local_queues(custom, plan.namespace):
            raise ClusterPolicyError(
                f"namespace {plan.namespace!r} has no Kueue LocalQueue {queue!r} (or does not exist, or the queue's "
                "ClusterQueue is gone): "
                "the job would never be admitted; set kueue_queue to the namespace's queue (infra/k8s/base/team)"
            ) from None
        why = (
            "the cluster serves no Kueue API" if exc.status == 404 else f"refused ({exc.status} {exc.reason})"
        )
        report(f"ClusterQueue quota not checked: reading the queue behind {plan.namespace}/{queue}: {why}")
        return
    check_cluster_queue(plan, ask, cq, members)


def _serves_local_queues(custom: Any, namespace: str) -> bool:
    from kubernetes.client import ApiException

    try:
        custom.list_namespaced_custom_object(*KUEUE, namespace, "localqueues", limit=1)
    except ApiException:
        return False
    return True
