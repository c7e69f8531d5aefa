"""Every object the platform renders or creates, against the projects' published CRDs on a real API server.

The CRDs are upstream's (Trainer v2, Training Operator v1.9, Kueue, KServe v0.20, Prometheus
operator; see tests/support/published_crds.py), not the project's minimal ones, which leave
``mlPolicy``, pod templates and predictors open. Each object goes through ``kubectl apply
--server-side --dry-run=server`` (kubectl refuses fields the server's published schema lacks), and
what the server would store is compared with what was sent: a server prunes an undeclared
field silently, and :func:`~tests.support.published_crds.pruned` names it. The CRDs' CEL rules
run (Kubernetes 1.34): an object one of them refuses fails here as on a user's cluster.
The objects: both overlays (ClusterTrainingRuntimes, Kueue queues and flavors, the
InferenceService, ServiceMonitor and PodMonitor included), the launcher's TrainJob in the
shapes it takes (CPU, GPU with type and region, production priority, several workers), and
the KServe target's InferenceService.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from cli import manifests
from tests.services.kubernetes import KubeCluster
from tests.support.k8s_controller import install_crds
from tests.support.published_crds import cel_rules, pruned, published_crds
from training.kubernetes_config import KubernetesJobSettings, plan
from training.kubernetes_jobs import trainjob

IMAGE = "ghcr.io/mlops-platform/mlops:0.1.0"


@pytest.fixture(scope="module")
def cluster(kube_apiserver: KubeCluster) -> KubeCluster:
    """The published CRDs installed, and every overlay's namespaces created (a dry run creates none)."""
    install_crds(kube_apiserver)
    for overlay in manifests.overlays():
        for obj in manifests.objects(manifests.render(overlay)):
            if obj["kind"] == "Namespace":
                kube_apiserver.kubectl("create", "namespace", obj["metadata"]["name"], check=False)
    return kube_apiserver


def key(obj: dict[str, Any]) -> tuple[str, str, str]:
    meta = obj["metadata"]
    return obj["kind"], meta.get("namespace", ""), meta["name"]


def dry_run(cluster: KubeCluster, objs: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, Any]]:
    """What the API server would store for each object (server-side apply, dry run), by kind/namespace/name."""
    done = cluster.kubectl(
        "apply",
        "--server-side",
        "--dry-run=server",
        "--field-manager=mlops-crd-test",
        "--force-conflicts",  # other tests of the session's API server applied the same objects client-side
        "-o",
        "json",
        "-f",
        "-",
        stdin=yaml.safe_dump_all(objs, sort_keys=False),
        check=False,
    )
    assert done.returncode == 0, f"the API server (or kubectl's schema check) refused: {done.stderr}"
    answer = json.loads(done.stdout)
    items = answer["items"] if answer.get("kind") == "List" else [answer]
    return {key(item): item for item in items}


def assert_nothing_pruned(cluster: KubeCluster, objs: list[dict[str, Any]]) -> None:
    stored = dry_run(cluster, objs)
    assert sorted(stored) == sorted(key(o) for o in objs)
    problems = {"/".join(key(o)): p for o in objs if (p := pruned(o, stored[key(o)]))}
    assert problems == {}, json.dumps(problems, indent=1)


@pytest.mark.parametrize("overlay", ["dev", "prod"])
def test_every_rendered_object_is_accepted_with_nothing_pruned(cluster: KubeCluster, overlay: str) -> None:
    objs = manifests.objects(manifests.render(overlay))
    kinds = {o["kind"] for o in objs}
    assert {
        "ClusterTrainingRuntime",
        "ClusterQueue",
        "InferenceService",
        "ServiceMonitor",
        "PodMonitor",
    } <= kinds
    assert_nothing_pruned(cluster, objs)


JOB_SHAPES: dict[str, dict[str, Any]] = {
    "cpu-default": {},
    "gpu-region-production": {
        "workers": 3,
        "gpus_per_worker": 2,
        "gpu_type": "NVIDIA-H100-80GB-HBM3",
        "region": "eu-west-1",
        "allowed_regions": "eu-west-1,eu-central-1",
        "priority_class": "mlops-production-training",
    },
    "mig-slices": {"workers": 2, "gpus_per_worker": 1, "gpu_resource": "nvidia.com/mig-1g.10gb"},
}


@pytest.mark.parametrize("shape", sorted(JOB_SHAPES))
def test_the_launchers_trainjobs_are_accepted_with_nothing_pruned(
    cluster: KubeCluster, shape: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLFLOW_S3_ENDPOINT_URL", "http://s3.mlops-system:8080")
    settings = KubernetesJobSettings(
        namespace="team-risk", staging_uri="s3://mlops/jobs/t", **JOB_SHAPES[shape]
    )
    job = trainjob(plan(settings, settings.workers * settings.ranks_per_worker()), "train-crd-check", IMAGE)
    assert_nothing_pruned(cluster, [job])


def test_a_field_the_real_schema_lacks_is_caught(cluster: KubeCluster) -> None:
    """The check itself: the runtime's old ``mlPolicy.torch.numProcPerNode`` is refused or pruned, never kept."""
    runtime = next(
        o for o in manifests.objects(manifests.render("dev")) if o["kind"] == "ClusterTrainingRuntime"
    )
    runtime["spec"]["mlPolicy"]["torch"] = {"numProcPerNode": "auto"}
    done = cluster.kubectl(
        "apply", "--server-side", "--dry-run=server", "-o", "json", "-f", "-",
        stdin=yaml.safe_dump(runtime), check=False,
    )  # fmt: skip
    if done.returncode != 0:
        assert 'unknown field "numProcPerNode"' in done.stderr or "numProcPerNode" in done.stderr, done.stderr
    else:
        assert pruned(runtime, json.loads(done.stdout)) == ["spec.mlPolicy.torch.numProcPerNode: pruned"]


def test_cel_rules_are_counted_at_every_depth() -> None:
    crd = {"a": {"x-kubernetes-validations": [1], "b": [{"x-kubernetes-validations": [2, 3], "c": 1}]}}
    assert cel_rules(crd) == 3
    assert cel_rules({"a": [{"b": 1}]}) == 0


def test_the_published_crds_keep_their_cel_rules_on_the_server(cluster: KubeCluster) -> None:
    """Installed unmodified: every CEL rule of every file is in the CRD the server stores."""
    sent = {crd["metadata"]["name"]: cel_rules(crd) for crd in published_crds()}
    assert sum(sent.values()) > 0, "the published CRDs hold no CEL rule: not the upstream files?"
    listed = json.loads(cluster.kubectl("get", "crd", "-o", "json").stdout)["items"]
    stored = {crd["metadata"]["name"]: cel_rules(crd) for crd in listed if crd["metadata"]["name"] in sent}
    assert stored == sent


def test_a_cel_rule_of_the_published_trainjob_crd_refuses_an_object(cluster: KubeCluster) -> None:
    """The API server evaluates the CRD's CEL rules: TrainJob's ``managedBy`` allows only two controllers."""
    job = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "cel-check", "namespace": "default"},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, "managedBy": "example.com/not-a-controller"},
    }
    done = cluster.kubectl(
        "apply", "--server-side", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump(job), check=False
    )
    assert done.returncode != 0
    assert "ManagedBy must be trainer.kubeflow.org/trainjob-controller" in done.stderr, done.stderr
    job["spec"]["managedBy"] = "trainer.kubeflow.org/trainjob-controller"
    done = cluster.kubectl(
        "apply", "--server-side", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump(job), check=False
    )
    assert done.returncode == 0, done.stderr


def test_pruned_names_missing_and_changed_fields_but_not_defaults() -> None:
    sent = {"spec": {"a": 1, "b": {"c": "x"}, "d": [1, 2], "empty": {}, "off": False, "zero": 0}}
    stored = {"spec": {"a": 1, "b": {}, "d": [1, 3], "default": True}}
    assert pruned(sent, stored) == ["spec.b.c: pruned", "spec.d[1]: sent 2, stored 3"]
