"""KServeTarget in RawDeployment mode, quickly: a real API server with KServe's published CRD, real `mlops serve` servers.

:class:`PlayedKServe` stands in for KServe's controller so that these tests need no node: for an
InferenceService it creates the predictor pods (the Deployment's), labelled
``serving.kserve.io/inferenceservice``, with the predictor's own container, marks them Running and
Ready, and sets the service's ``Ready`` condition. Each pod's server is a real ``mlops serve`` process
on this machine (two replicas), following the real MLflow registry's alias; the target drives every
pod's rollout router over HTTP, as it does in a cluster. What the stand-in hides: KServe's admission
webhooks, its Deployment and Service, the scheduler and kubelet (resources, priority, probes) and the
status KServe derives from them. tests/delivery/targets/test_kserve_on_pods.py runs the target on the
real controller and a real node, with requests through the Service.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from kubernetes import client

from delivery.targets.base import DeploymentError, TrafficShare
from delivery.targets.kserve import GROUP, PLURAL, VERSION, KServeTarget
from delivery.targets.kserve_predictor import (
    DEPLOYMENT_MODE_ANNOTATION,
    ISVC_LABEL,
    PredictorSpec,
    inference_service,
)
from delivery.targets.local import LocalServerTarget
from mlops.vocabulary import CHAMPION
from tests.services.kubernetes import KubeCluster
from tests.support.k8s_controller import install_crds
from tests.support.mounted_files import file_flags, missing_files
from tests.support.serving import DemoStore, ServerProcess, encoded, register, running_server, v2_body

pytestmark = pytest.mark.slow
NAMESPACE = "rollout-tests"
REPLICAS = 2


class PlayedKServe(threading.Thread):
    """Stands in for KServe's RawDeployment controller: predictor pods for one InferenceService."""

    def __init__(self, api_client: Any, name: str, replicas: int = REPLICAS):
        super().__init__(daemon=True)
        self.custom, self.core = client.CustomObjectsApi(api_client), client.CoreV1Api(api_client)
        self.name, self.replicas = name, replicas
        self.stop = threading.Event()
        self.created: list[str] = []

    def run(self) -> None:
        while not self.stop.wait(0.05):
            try:
                isvc = self.custom.get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, self.name)
            except client.ApiException:
                continue
            if not self.created:
                self.created = [self._pod(isvc, i) for i in range(self.replicas)]

    def _pod(self, isvc: dict[str, Any], index: int) -> str:
        predictor = isvc["spec"]["predictor"]
        name = f"{self.name}-predictor-{index}"
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": {ISVC_LABEL: self.name, **predictor.get("labels", {})}},
            "spec": {"containers": predictor["containers"], "volumes": predictor.get("volumes", [])},
        }
        self.core.create_namespaced_pod(NAMESPACE, pod)
        status = {
            "phase": "Running",
            "podIP": "127.0.0.1",
            "conditions": [{"type": "Ready", "status": "True"}],
        }
        self.core.patch_namespaced_pod_status(name, NAMESPACE, {"status": status})
        if index == self.replicas - 1:  # every predictor pod is ready: KServe reports the service Ready
            ready = {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}
            body = {"status": {"conditions": [ready]}}
            self.custom.patch_namespaced_custom_object_status(
                GROUP, VERSION, NAMESPACE, PLURAL, self.name, body
            )
        return name


@pytest.fixture(scope="module")
def cluster(kube_apiserver: KubeCluster) -> KubeCluster:
    install_crds(kube_apiserver)  # the published CRDs, KServe's InferenceService included
    kube_apiserver.kubectl("create", "namespace", NAMESPACE, check=False)
    return kube_apiserver


@pytest.fixture
def served(
    cluster: KubeCluster, store: DemoStore, request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[Any, str, list[ServerProcess]]]:
    """Two real servers of a fresh model (version 1 champion, version 2 registered) and the played controller.

    The servers require the admin credential on the rollout route, as the shipped predictor does
    (``--admin-token-file``): a target that set weights without it would be refused (401)."""
    name = request.node.name.replace("_", "-")[:40].strip("-")
    register(store, name, store.onnx_a)
    register(store, name, store.onnx_b, alias=None)
    admin = tmp_path / "admin-token"
    admin.write_text(ADMIN_TOKEN)
    flags = (
        "--model-name",
        name,
        "--reload-interval-s",
        "0.2",
        "--no-request-log",
        "--admin-token-file",
        str(admin),
    )
    api_client = cluster.api_client()
    controller = PlayedKServe(api_client, name)
    controller.start()
    with running_server(store, *flags) as first, running_server(store, *flags) as second:
        yield api_client, name, [first, second]
    controller.stop.set()
    controller.join()


ADMIN_TOKEN = "rollout-admin-credential"


def target_for(store: DemoStore, api_client: Any, name: str, servers: list[ServerProcess]) -> KServeTarget:
    urls = {f"{name}-predictor-{i}": s.url for i, s in enumerate(servers)}
    return KServeTarget(
        api_client,
        NAMESPACE,
        name,
        name,
        store.workspace.tracking_uri,
        predictor=PredictorSpec(image="ghcr.io/mlops-platform/mlops:0.1.0"),
        url_of=lambda pod: urls[pod.metadata.name],
        admin_token=ADMIN_TOKEN,
        timeout_s=30,
        poll_s=0.05,
    )


def answered(server: ServerProcess, name: str, x: np.ndarray, n: int) -> set[str]:
    versions = set()
    for _ in range(n):
        reply = httpx.post(f"{server.url}/v2/models/{name}/infer", json=v2_body(x), timeout=10)
        assert reply.status_code == 200, reply.text
        versions.add(reply.json()["model_version"])
    return versions


def test_shadow_canary_rollback_and_promotion_on_every_pod(store: DemoStore, served: Any) -> None:
    api_client, name, servers = served
    target = target_for(store, api_client, name, servers)
    registry = store.tracking._client
    x = encoded(store, 2, offset=10)

    status = target.deploy("1")  # creates the InferenceService; the pods serve the champion
    assert status.serving == (TrafficShare("1", 100),) and status.converged
    isvc = target.api.get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, name)
    assert isvc["metadata"]["annotations"][DEPLOYMENT_MODE_ANNOTATION] == "RawDeployment"
    predictor = isvc["spec"]["predictor"]
    assert "model" not in predictor and "canaryTrafficPercent" not in predictor
    (container,) = predictor["containers"]
    assert container["image"] == "ghcr.io/mlops-platform/mlops:0.1.0"
    assert f"--model-name={name}" in container["args"] and f"--alias={CHAMPION}" in container["args"]

    shadowed = target.shadow("2")
    assert shadowed.shadow == "2" and shadowed.serving == (TrafficShare("1", 100),)
    for server in servers:
        assert answered(server, name, x, 5) == {"1"}  # the shadow answers nobody
    assert target.rollback().converged  # the shadow goes, from every pod

    split = target.set_traffic("2", 50)
    assert split.serving == (TrafficShare("1", 50), TrafficShare("2", 50))
    for server in servers:  # every replica splits, not just the one behind a Service
        assert answered(server, name, x, 40) == {"1", "2"}
    metrics = target.metrics_text()
    per_pod = [LocalServerTarget(s.url, store.tracking, name).metrics_text() for s in servers]
    assert _requests(metrics, name) == sum(_requests(text, name) for text in per_pod) > 0

    assert target.rollback().serving == (TrafficShare("1", 100),)
    assert str(registry.get_model_version_by_alias(name, CHAMPION).version) == "1"

    assert target.set_traffic("2", 10).serving == (TrafficShare("1", 90), TrafficShare("2", 10))
    promoted = target.deploy("2")  # the alias moves; every pod's champion follows, the challenger goes
    assert promoted.serving == (TrafficShare("2", 100),) and promoted.converged
    assert str(registry.get_model_version_by_alias(name, CHAMPION).version) == "2"
    for server in servers:
        assert answered(server, name, x, 5) == {"2"}
    assert target.current().serving == (TrafficShare("2", 100),)


def test_pods_that_disagree_are_reported_and_the_next_change_reapplies(store: DemoStore, served: Any) -> None:
    api_client, name, servers = served
    target = target_for(store, api_client, name, servers)
    target.deploy("1")
    out_of_step = LocalServerTarget(servers[1].url, store.tracking, name, admin_token=ADMIN_TOKEN)
    out_of_step.set_traffic("2", 30)  # one pod out of step
    with pytest.raises(DeploymentError, match="the predictor pods serve different traffic plans"):
        target.current()
    assert target.set_traffic("2", 30).serving == (TrafficShare("1", 70), TrafficShare("2", 30))


@pytest.mark.parametrize("percent", [-1, 101, 150])
def test_a_share_outside_0_to_100_is_refused_by_the_target(store: DemoStore, percent: int) -> None:
    # The published CRD puts no bound on canaryTrafficPercent (150 is stored): only the target's check holds.
    target = KServeTarget(None, NAMESPACE, "any", "any", store.workspace.tracking_uri)
    with pytest.raises(ValueError, match=f"percent must be within 0..100, got {percent}"):
        target.set_traffic("2", percent)


def test_the_published_crd_does_not_bound_canary_traffic_percent(cluster: KubeCluster) -> None:
    body = inference_service("unbounded", NAMESPACE, "m", PredictorSpec(image="img"))
    body["spec"]["predictor"]["canaryTrafficPercent"] = 150
    stored = client.CustomObjectsApi(cluster.api_client()).create_namespaced_custom_object(
        GROUP, VERSION, NAMESPACE, PLURAL, body, dry_run="All"
    )
    assert stored["spec"]["predictor"]["canaryTrafficPercent"] == 150


def test_a_service_with_a_second_implementation_is_refused(cluster: KubeCluster, store: DemoStore) -> None:
    body = inference_service("two-implementations", NAMESPACE, "m", PredictorSpec(image="img"))
    body["spec"]["predictor"]["model"] = {"modelFormat": {"name": "onnx"}, "storageUri": "s3://bucket/m/1"}
    custom = client.CustomObjectsApi(cluster.api_client())
    custom.create_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, body)
    target = KServeTarget(
        cluster.api_client(), NAMESPACE, "two-implementations", "m", store.workspace.tracking_uri
    )
    with pytest.raises(DeploymentError, match=r"is not the platform's InferenceService .*'model'"):
        target.set_traffic("2", 10)


def test_a_service_in_knatives_serverless_mode_is_refused(cluster: KubeCluster, store: DemoStore) -> None:
    """Only the plain Deployment mode (``RawDeployment``, or ``Standard`` as KServe 0.15+ renames it: the real
    controller's rewrite is accepted in test_kserve_on_pods.py) keeps both versions' counters in one pod."""
    body = inference_service("serverless", NAMESPACE, "m", PredictorSpec(image="img"))
    body["metadata"]["annotations"][DEPLOYMENT_MODE_ANNOTATION] = "Serverless"
    client.CustomObjectsApi(cluster.api_client()).create_namespaced_custom_object(
        GROUP, VERSION, NAMESPACE, PLURAL, body
    )
    target = KServeTarget(cluster.api_client(), NAMESPACE, "serverless", "m", store.workspace.tracking_uri)
    with pytest.raises(DeploymentError, match=r"is not the platform's InferenceService \(mode 'Serverless'"):
        target.set_traffic("2", 10)


def test_targets_without_a_service_say_so(cluster: KubeCluster, store: DemoStore) -> None:
    target = KServeTarget(
        cluster.api_client(), NAMESPACE, "absent-service", "m", store.workspace.tracking_uri
    )
    assert target.current().serving == ()
    with pytest.raises(DeploymentError, match="absent-service does not exist; deploy"):
        target.set_traffic("2", 10)
    with pytest.raises(DeploymentError, match="does not exist and no predictor was given"):
        target.deploy("1")


def test_a_service_without_ready_pods_times_out_naming_it(cluster: KubeCluster, store: DemoStore) -> None:
    target = KServeTarget(
        cluster.api_client(), NAMESPACE, "no-pods", "m", store.workspace.tracking_uri,
        predictor=PredictorSpec(image="img"), timeout_s=0.5, poll_s=0.05,
    )  # fmt: skip
    with pytest.raises(DeploymentError, match=r"has 0 ready predictor pod\(s\) after 0.5 s \(0 labelled"):
        target.deploy("1")


def _requests(text: str, model: str) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "mlops_serving_requests_total" and sample.labels.get("model") == model:
                total += sample.value
    return total


def test_every_file_the_predictor_is_told_to_read_is_mounted() -> None:
    predictor = inference_service("files", NAMESPACE, "m", PredictorSpec(image="img"))["spec"]["predictor"]
    container = predictor["containers"][0]
    assert "--admin-token-file" in file_flags(container)
    assert missing_files(predictor, container) == {}
