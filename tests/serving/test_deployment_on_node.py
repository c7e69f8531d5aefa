"""The model server as a plain Deployment on a real node: what the pod itself does, without KServe.

KServe's real controller deploys the same predictor in tests/delivery/targets/test_kserve_on_pods.py;
this test keeps to the pod's own behaviour, which holds under any controller (or none). The Deployment runs the predictor container of ``infra/k8s/base/team/inferenceservice.yaml`` (same
command, probes, Secret volumes and bearer token; image, tracking server and S3 endpoint adapted to
this node) following ``champion`` in a real MLflow server, and verifies each version's signature
against the public key its Secret mounts before loading it. A Service selects the pod: the endpoints controller lists it
as ready only once the readiness probe passes, which is what gates traffic on a cluster (the test
sends to the ready address itself). When ``champion`` moves, the
pod serves the new version without one failed request.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import httpx
import numpy as np
import pandas as pd
import pytest

from mlops.data.sample_data import SampleDataConfig, generate
from mlops.tracking.store import TrackingStore
from tests.services.node import K8sNode
from tests.services.plugin import MlflowService
from tests.support.pods import (
    REGISTRATION_ENV,
    create_serving_secrets,
    namespace,
    predictor_deployment,
    register_on,
)
from tests.support.serving import train_onnx

# The first test of a session may build the platform image (minutes cold) and unpack it on the node.
pytestmark = pytest.mark.timeout(2400)
MANIFEST = Path(__file__).resolve().parents[2] / "infra" / "k8s" / "base" / "team" / "inferenceservice.yaml"
TOKEN = "pods-test-token"


def _ready_addresses(node: K8sNode, ns: str, service: str) -> tuple[list[str], list[str]]:
    endpoints = node.core().read_namespaced_endpoints(service, ns)
    ready, not_ready = [], []
    for subset in endpoints.subsets or []:
        ready += [a.ip for a in subset.addresses or []]
        not_ready += [a.ip for a in subset.not_ready_addresses or []]
    return ready, not_ready


@pytest.mark.slow
def test_model_server_deployment_serves_v2_gates_on_readiness_and_follows_champion(
    k8s_node: K8sNode, mlflow_server: MlflowService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kubernetes import client, utils

    s3 = mlflow_server.s3
    for key in REGISTRATION_ENV:  # registration signs with the cluster's key and audits to its S3 trail
        monkeypatch.setenv(key, s3.env[key])

    name = f"pods-credit-{uuid.uuid4().hex[:6]}"
    train = generate(SampleDataConfig(rows=800, seed=21))
    holdout = generate(SampleDataConfig(rows=200, seed=22))
    onnx_a = train_onnx(tmp_path / "a", train, seed=0)
    onnx_b = train_onnx(tmp_path / "b", train, seed=1, hidden_units=(16,))
    tracking = TrackingStore.from_uri(mlflow_server.tracking_uri)
    v1 = register_on(mlflow_server.tracking_uri, name, onnx_a, holdout, "pods-serving")
    tracking.move_alias(name, "champion", v1, None)

    endpoint = k8s_node.from_pod(s3.endpoint)
    deployment = predictor_deployment(
        MANIFEST,
        k8s_node.image,
        {
            "--model-name": name,
            "--tracking-uri": k8s_node.from_pod(mlflow_server.tracking_uri),
            "--reload-interval-s": "1",
            "--request-log-uri": "",
            "--request-log-sample-rate": "",
        },
        {
            "MLFLOW_S3_ENDPOINT_URL": endpoint,
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_DEFAULT_REGION": s3.env["AWS_DEFAULT_REGION"],
            # The server signs S3 URLs for the endpoint it knows (127.0.0.1 here, unreachable from a
            # pod): download through the server instead, as a pod that cannot reach S3 must.
            "MLFLOW_ENABLE_PROXY_MULTIPART_DOWNLOAD": "false",
        },
    )
    deployment["spec"]["template"]["spec"]["containers"][0]["args"].append("--no-request-log")
    probe = deployment["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]
    probe["periodSeconds"] = 1
    with namespace(k8s_node, "serving") as ns:
        api = k8s_node.cluster.api_client()
        create_serving_secrets(k8s_node, ns, s3.env, TOKEN, "rollout-admin-credential")
        utils.create_from_dict(api, deployment, namespace=ns)
        labels = deployment["spec"]["selector"]["matchLabels"]
        client.CoreV1Api(api).create_namespaced_service(
            ns,
            client.V1Service(
                metadata=client.V1ObjectMeta(name="predictor"),
                spec=client.V1ServiceSpec(selector=labels, ports=[client.V1ServicePort(port=8080)]),
            ),
        )
        pod_name = _wait_for_pod_name(k8s_node, ns, labels)
        # Until the model has loaded, the probe fails: the pod is listed, but not as ready.
        seen_not_ready = False
        deadline = time.monotonic() + 240
        while True:
            ready, not_ready = _ready_addresses(k8s_node, ns, "predictor")
            seen_not_ready = seen_not_ready or bool(not_ready)
            if ready:
                break
            assert time.monotonic() < deadline, k8s_node.logs(pod_name, ns)
            time.sleep(0.3)
        assert seen_not_ready, "the endpoints never listed the starting pod as not ready"
        pod = k8s_node.core().read_namespaced_pod(pod_name, ns)
        assert ready == [pod.status.pod_ip]
        url = f"http://{ready[0]}:8080"
        features = _features(onnx_a, holdout)

        with httpx.Client(base_url=url, timeout=10, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
            assert httpx.get(f"{url}/v2/models/{name}/infer", timeout=10).status_code == 401
            first = _infer(http, name, features)
            assert first["model_version"] == v1
            assert _requests_served(http.get("/metrics").text, name, v1) == 1

            v2 = register_on(mlflow_server.tracking_uri, name, onnx_b, holdout, "pods-serving")
            tracking.move_alias(name, "champion", v2, v1)
            versions: list[str] = []
            failures = 0
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and (not versions or versions[-1] != v2):
                try:
                    versions.append(_infer(http, name, features)["model_version"])
                except (httpx.HTTPError, AssertionError):
                    failures += 1
                time.sleep(0.05)
            assert failures == 0
            assert versions[-1] == v2, f"still serving {versions[-1]} 120 s after champion moved"
            assert set(versions) <= {v1, v2}
            outputs_b = _infer(http, name, features)["outputs"][0]["data"]
            assert outputs_b != first["outputs"][0]["data"]
            assert _requests_served(http.get("/metrics").text, name, v2) >= 2


def _requests_served(exposition: str, model: str, version: str) -> float:
    """Successful inference requests the pod's /metrics counts for one model version."""
    from prometheus_client.parser import text_string_to_metric_families

    return sum(
        sample.value
        for family in text_string_to_metric_families(exposition)
        for sample in family.samples
        if sample.name == "mlops_serving_requests_total"
        and sample.labels.get("model") == model
        and sample.labels.get("version") == version
        and sample.labels.get("code") == "200"
    )


def _wait_for_pod_name(node: K8sNode, ns: str, labels: dict[str, str]) -> str:
    selector = ",".join(f"{k}={v}" for k, v in labels.items())
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        pods = node.core().list_namespaced_pod(ns, label_selector=selector).items
        if pods:
            return str(pods[0].metadata.name)
        time.sleep(0.3)
    raise AssertionError(f"the Deployment created no pod in {ns}")


def _features(onnx_dir: Path, holdout: pd.DataFrame) -> np.ndarray:
    from mlops.model.onnx_model import OnnxScorer

    return OnnxScorer.load(onnx_dir / "model.onnx").spec.encode(holdout.head(4))


def _infer(http: httpx.Client, name: str, x: np.ndarray) -> dict:
    from tests.support.serving import v2_body

    response = http.post(f"/v2/models/{name}/infer", json=v2_body(x))
    assert response.status_code == 200, response.text
    return dict(response.json())
