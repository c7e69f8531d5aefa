"""KServeTarget against a real kube-apiserver with an InferenceService CRD applied.

KServe's controller cannot run here (no Knative, no Go module proxy), so
:class:`PlayedController` plays its part the way Serverless mode behaves: a new
``storageUri`` is a new revision; ``canaryTrafficPercent`` splits traffic between it and
the last rolled-out revision; no field rolls the latest out to 100 %; each handled
generation gets ``observedGeneration`` and a ``Ready`` condition. Everything else — the
API server, the CRD's schema, patches, the status subresource, the MLflow registry — is real.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from delivery.targets.base import DeploymentError, ShadowUnsupported, TrafficShare
from delivery.targets.kserve import CANARY_ANNOTATION, GROUP, PLURAL, STABLE_ANNOTATION, VERSION, KServeTarget
from mlops.vocabulary import CHAMPION
from tests.services.kubernetes import KubeCluster
from tests.support.k8s_controller import install_crds
from tests.support.serving import DemoStore, register

NAMESPACE = "rollout-tests"


class PlayedController(threading.Thread):
    """Stands in for KServe's controller (Serverless mode) for one InferenceService."""

    def __init__(self, api: Any, name: str):
        super().__init__(daemon=True)
        self.api, self.name = api, name
        self.ready = True
        self.message = ""
        self.revisions = 0
        self.latest_uri: str | None = None
        self.rolled_out: str | None = None
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.05):
            try:
                found = self.api.get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, self.name)
            except Exception:
                continue
            generation = found["metadata"]["generation"]
            if (found.get("status") or {}).get("observedGeneration") == generation:
                continue
            self.api.patch_namespaced_custom_object_status(
                GROUP, VERSION, NAMESPACE, PLURAL, self.name, {"status": self.reconcile(found, generation)}
            )

    def reconcile(self, found: dict[str, Any], generation: int) -> dict[str, Any]:
        if not self.ready:
            condition = {
                "type": "Ready",
                "status": "False",
                "reason": "RevisionFailed",
                "message": self.message,
            }
            return {"observedGeneration": generation, "conditions": [condition]}
        predictor = found["spec"]["predictor"]
        uri, percent = predictor["model"]["storageUri"], predictor.get("canaryTrafficPercent")
        if uri != self.latest_uri:
            self.revisions += 1
            self.latest_uri = uri
        latest = f"{self.name}-predictor-{self.revisions:05d}"
        if percent is None or self.rolled_out is None or self.rolled_out == latest:
            self.rolled_out = latest
            traffic = [{"revisionName": latest, "percent": 100, "latestRevision": True}]
        else:
            traffic = [
                {
                    "revisionName": self.rolled_out,
                    "percent": 100 - percent,
                    "latestRevision": False,
                    "tag": "prev",
                },
                {"revisionName": latest, "percent": percent, "latestRevision": True, "tag": "latest"},
            ]
        return {
            "observedGeneration": generation,
            "conditions": [{"type": "Ready", "status": "True"}],
            "components": {"predictor": {"traffic": traffic, "latestReadyRevision": latest}},
        }


@pytest.fixture(scope="module")
def cluster(kube_apiserver: KubeCluster) -> KubeCluster:
    install_crds(kube_apiserver)  # infra/k8s/crds, InferenceService included
    kube_apiserver.kubectl("create", "namespace", NAMESPACE, check=False)
    return kube_apiserver


@pytest.fixture
def played(
    cluster: KubeCluster, request: pytest.FixtureRequest
) -> Iterator[tuple[Any, str, PlayedController]]:
    from kubernetes import client

    name = request.node.name.replace("_", "-")[:40].strip("-")
    api_client = cluster.api_client()
    controller = PlayedController(client.CustomObjectsApi(api_client), name)
    controller.start()
    yield api_client, name, controller
    controller.stop.set()
    controller.join()


def target_for(store: DemoStore, api_client: Any, name: str, timeout_s: float = 20) -> KServeTarget:
    return KServeTarget(
        api_client,
        NAMESPACE,
        name,
        name,
        store.workspace.tracking_uri,
        resources={"requests": {"cpu": "1", "memory": "1Gi"}},
        timeout_s=timeout_s,
        poll_s=0.05,
    )


def test_deploy_canary_steps_rollback_and_promotion(store: DemoStore, played: Any) -> None:
    api_client, name, controller = played
    register(store, name, store.onnx_a, alias=None)
    register(store, name, store.onnx_b, alias=None)
    client = store.tracking.client
    target = target_for(store, api_client, name)

    status = target.deploy("1")  # creates the InferenceService
    assert status.serving == (TrafficShare("1", 100),) and status.converged
    assert str(client.get_model_version_by_alias(name, CHAMPION).version) == "1"
    isvc = target.api.get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, name)
    model = isvc["spec"]["predictor"]["model"]
    assert model["storageUri"] == client.get_model_version_download_uri(name, "1")
    assert model["resources"] == {"requests": {"cpu": "1", "memory": "1Gi"}}
    assert isvc["metadata"]["annotations"][STABLE_ANNOTATION] == "1"

    assert target.set_traffic("2", 10).serving == (TrafficShare("1", 90), TrafficShare("2", 10))
    isvc = target.api.get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, name)
    assert isvc["spec"]["predictor"]["canaryTrafficPercent"] == 10
    assert isvc["spec"]["predictor"]["model"]["storageUri"] == client.get_model_version_download_uri(
        name, "2"
    )
    assert target.set_traffic("2", 50).serving == (TrafficShare("1", 50), TrafficShare("2", 50))
    assert controller.revisions == 2  # a new weight is not a new revision

    status = target.rollback()  # canaryTrafficPercent: 0
    assert status.serving == (TrafficShare("1", 100),) and status.converged
    isvc = target.api.get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, name)
    assert isvc["spec"]["predictor"]["canaryTrafficPercent"] == 0

    assert target.set_traffic("2", 25).serving == (TrafficShare("1", 75), TrafficShare("2", 25))
    status = target.deploy("2")  # promotion: the field goes, the canary revision takes 100 %
    assert status.serving == (TrafficShare("2", 100),) and status.converged
    isvc = target.api.get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, name)
    assert "canaryTrafficPercent" not in isvc["spec"]["predictor"]
    assert isvc["metadata"]["annotations"] == {STABLE_ANNOTATION: "2"}
    assert CANARY_ANNOTATION not in isvc["metadata"]["annotations"]
    assert str(client.get_model_version_by_alias(name, CHAMPION).version) == "2"
    assert target.current().serving == (TrafficShare("2", 100),)

    with pytest.raises(ShadowUnsupported, match="cannot mirror requests"):
        target.shadow("1")
    with pytest.raises(DeploymentError, match="version 2 is the stable revision"):
        target.set_traffic("2", 30)


def test_a_revision_that_never_gets_ready_times_out_and_moves_no_alias(store: DemoStore, played: Any) -> None:
    api_client, name, controller = played
    register(store, name, store.onnx_a, alias=None)
    register(store, name, store.onnx_b, alias=None)
    client = store.tracking.client
    target = target_for(store, api_client, name, timeout_s=1.5)
    target.deploy("1")
    controller.ready, controller.message = False, "Revision failed: image pull back-off"
    with pytest.raises(
        DeploymentError, match=r"not Ready for generation 2 after 1.5 s .*image pull back-off"
    ):
        target.deploy("2")
    assert str(client.get_model_version_by_alias(name, CHAMPION).version) == "1"


def test_the_crd_schema_refuses_a_bad_canary_share(cluster: KubeCluster) -> None:
    manifest = (
        "apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\n"
        f"metadata: {{name: typo, namespace: {NAMESPACE}}}\n"
        "spec: {predictor: {canaryTrafficPercent: ten, model: {modelFormat: {name: onnx}, storageUri: s3://m}}}\n"
    )
    result = cluster.kubectl("create", "-f", "-", stdin=manifest, check=False)
    assert result.returncode != 0 and "canaryTrafficPercent" in result.stderr


def test_targets_without_a_service_say_so(cluster: KubeCluster, store: DemoStore) -> None:
    target = target_for(store, cluster.api_client(), "absent-service")
    assert target.current().serving == ()
    with pytest.raises(DeploymentError, match="absent-service does not exist; deploy"):
        target.set_traffic("2", 10)
    with pytest.raises(DeploymentError, match="no metrics_url"):
        target.metrics_text()
