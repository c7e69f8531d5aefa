"""The rendered overlays against a real kube-apiserver: accepted, and RBAC is least privilege.

The CRDs are this project's minimal ones (infra/k8s/crds); no controller runs, so this
proves the API server accepts, type-checks and stores every object, and that the
pipeline ServiceAccount's permissions are exactly what the components use.
"""

from __future__ import annotations

from typing import Any

import pytest

from cli import manifests
from tests.services.kubernetes import KubeCluster
from tests.support.k8s_controller import install_crds

SA = "system:serviceaccount:{ns}:mlops-pipeline-runner"


@pytest.fixture(scope="module")
def prod(kube_apiserver: KubeCluster) -> KubeCluster:
    """The prod overlay applied for real (after its CRDs and namespaces)."""
    install_crds(kube_apiserver)
    namespaces = [o for o in manifests.objects(manifests.render("prod")) if o["kind"] == "Namespace"]
    for namespace in namespaces:
        kube_apiserver.kubectl("create", "namespace", namespace["metadata"]["name"], check=False)
    kube_apiserver.kubectl("apply", "-k", str(manifests.MANIFESTS_DIR / "overlays" / "prod"))
    return kube_apiserver


@pytest.mark.parametrize("overlay", ["dev", "prod"])
def test_server_side_dry_run_accepts_every_object(prod: KubeCluster, overlay: str) -> None:
    prod.kubectl("create", "namespace", "team-dev", check=False)
    done = prod.kubectl(
        "apply", "--dry-run=server", "-k", str(manifests.MANIFESTS_DIR / "overlays" / overlay)
    )
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    assert len(lines) == len(manifests.objects(manifests.render(overlay)))
    assert all("(server dry run)" in line for line in lines), done.stdout


def test_kueue_and_inferenceservice_objects_exist_after_apply(prod: KubeCluster) -> None:
    queues = prod.kubectl("get", "localqueues.kueue.x-k8s.io", "-A", "-o", "name").stdout.split()
    assert sorted(queues) == ["localqueue.kueue.x-k8s.io/training"] * 2
    flavors = prod.kubectl("get", "resourceflavors.kueue.x-k8s.io", "-o", "name").stdout.split()
    assert len(flavors) == 6
    cq = prod.kubectl(
        "get", "clusterqueue.kueue.x-k8s.io/mlops-training", "-o", "jsonpath={.spec.cohortName}"
    )
    assert cq.stdout == "mlops"
    isvc = prod.kubectl(
        "get",
        "inferenceservice/credit-default",
        "-n",
        "team-risk",
        "-o",
        "jsonpath={.spec.predictor.containers[0].image}",
    )
    assert isvc.stdout == "ghcr.io/mlops-platform/mlops:0.1.0"


def test_the_server_refuses_a_mistyped_custom_resource(prod: KubeCluster) -> None:
    bad = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: wrong, namespace: team-risk}
spec: {clusterQueue: 42}
"""
    done = prod.kubectl("create", "-f", "-", stdin=bad, check=False)
    assert done.returncode != 0 and "spec.clusterQueue" in done.stderr


def can_i(cluster: KubeCluster, namespace: str, verb: str, resource: str, *extra: str) -> bool:
    done = cluster.kubectl(
        "auth",
        "can-i",
        verb,
        resource,
        "-n",
        namespace,
        f"--as={SA.format(ns='team-risk')}",
        *extra,
        check=False,
    )
    assert done.stdout.strip() in ("yes", "no"), done.stdout + done.stderr
    return done.stdout.strip() == "yes"


ALLOWED: list[tuple[Any, ...]] = [
    ("create", "trainjobs.trainer.kubeflow.org"),
    ("watch", "trainjobs.trainer.kubeflow.org"),
    ("delete", "trainjobs.trainer.kubeflow.org"),
    ("list", "pods"),
    ("get", "pods", "--subresource=log"),
    ("create", "inferenceservices.serving.kserve.io"),
    ("patch", "inferenceservices.serving.kserve.io"),
    ("list", "limitranges"),
    ("get", "resourcequotas"),
    ("get", "localqueues.kueue.x-k8s.io"),
]
DENIED: list[tuple[Any, ...]] = [
    ("list", "secrets"),
    ("get", "secrets/mlops-tracking"),
    ("get", "configmaps/mlops-tracking"),
    ("create", "pods"),
    ("delete", "pods"),
    ("patch", "trainjobs.trainer.kubeflow.org", "--subresource=status"),
    ("create", "pytorchjobs.kubeflow.org"),
    ("get", "pytorchjobs.kubeflow.org"),
    ("delete", "inferenceservices.serving.kserve.io"),
    ("create", "rolebindings.rbac.authorization.k8s.io"),
    ("patch", "resourcequotas"),
    ("create", "deployments.apps"),
    ("create", "localqueues.kueue.x-k8s.io"),
    ("update", "limitranges"),
]


@pytest.mark.parametrize("check", ALLOWED, ids=lambda c: " ".join(c))
def test_pipeline_service_account_may_do_what_components_need(
    prod: KubeCluster, check: tuple[str, ...]
) -> None:
    assert can_i(prod, "team-risk", *check)


@pytest.mark.parametrize("check", DENIED, ids=lambda c: " ".join(c))
def test_pipeline_service_account_is_denied_the_rest(prod: KubeCluster, check: tuple[str, ...]) -> None:
    assert not can_i(prod, "team-risk", *check)


def test_pipeline_service_account_has_nothing_in_another_team_or_cluster_wide(prod: KubeCluster) -> None:
    assert not can_i(prod, "team-fraud", "create", "trainjobs.trainer.kubeflow.org")
    assert not can_i(prod, "team-fraud", "get", "pods")
    assert not can_i(prod, "team-risk", "get", "nodes")
    assert not can_i(prod, "team-risk", "create", "clusterqueues.kueue.x-k8s.io")
