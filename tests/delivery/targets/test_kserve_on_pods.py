"""The KServe target on KServe's real controller: RawDeployment, our server as the predictor, on a real node.

KServe's controller manager (the release's, with its own CRDs, webhooks and ConfigMap) reconciles the
platform's InferenceService into a Deployment and a Service; the node's kubelet runs the platform image's
``mlops serve``, which follows ``champion`` in a real MLflow server and verifies each version's signature
before loading it. Requests reach the model through the Service's cluster IP (kube-proxy) as a client in the
cluster sends them; the canary is the platform's own router inside every predictor pod (RawDeployment does
not split traffic: KServe's ``canaryTrafficPercent`` is never written), driven by :class:`KServeTarget`.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import yaml
from kubernetes import client

from delivery.targets.kserve import GROUP, PLURAL, VERSION, KServeTarget
from delivery.targets.kserve_predictor import HTTP_PORT, ISVC_LABEL, PredictorSpec, inference_service
from mlops.data.sample_data import SampleDataConfig, generate
from mlops.tracking.store import TrackingStore
from tests.services.node import Controllers, K8sNode
from tests.services.plugin import MlflowService
from tests.support.k8s_controller import apply_team_rules
from tests.support.pods import REGISTRATION_ENV, create_serving_secrets, namespace, register_on
from tests.support.serving import train_onnx, v2_body

pytestmark = [pytest.mark.timeout(2400), pytest.mark.slow]
TOKEN = "kserve-pods-token"
ADMIN_TOKEN = "kserve-pods-admin-credential"


def _team(node: K8sNode, ns: str, env: dict[str, str]) -> None:
    """The overlay's team rules and serving account in ``ns``; the Secrets an operator creates."""
    from cli import manifests

    apply_team_rules(node.cluster, ns)
    (account,) = [
        o
        for o in manifests.objects(manifests.render("dev"))
        if o["kind"] == "ServiceAccount" and o["metadata"]["name"] == "mlops-serving"
    ]
    account = {**account, "metadata": {**account["metadata"], "namespace": ns}}
    node.cluster.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(account))
    create_serving_secrets(node, ns, env, TOKEN, ADMIN_TOKEN)


def _service_for_this_node(node: K8sNode, mlflow_server: MlflowService, name: str, ns: str) -> dict[str, Any]:
    """The platform's InferenceService with this node's addresses; request logging off (no such bucket here)."""
    s3 = mlflow_server.s3
    spec = PredictorSpec(
        image=node.image,
        tracking_uri=node.from_pod(mlflow_server.tracking_uri),
        s3_endpoint_url=node.from_pod(s3.endpoint),
        max_replicas=1,
    )
    body = inference_service(name, ns, name, spec)
    (container,) = body["spec"]["predictor"]["containers"]
    container["args"] = [a for a in container["args"] if not a.startswith("--request-log-")]
    container["args"] += ["--no-request-log", "--reload-interval-s=1"]
    container["env"] += [
        {"name": "AWS_DEFAULT_REGION", "value": s3.env["AWS_DEFAULT_REGION"]},
        # The MLflow server signs S3 URLs for the endpoint it knows (127.0.0.1 here, unreachable from a
        # pod): downloads go through the server instead.
        {"name": "MLFLOW_ENABLE_PROXY_MULTIPART_DOWNLOAD", "value": "false"},
    ]
    container["readinessProbe"]["periodSeconds"] = 1
    return body


def _condition(isvc: dict[str, Any], kind: str) -> dict[str, Any]:
    for cond in (isvc.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return dict(cond)
    return {}


def _wait_ready(custom: Any, ns: str, name: str, node: K8sNode, timeout_s: float = 300) -> dict[str, Any]:
    """The InferenceService once KServe's own status says Ready."""
    deadline, isvc = time.monotonic() + timeout_s, {}
    while time.monotonic() < deadline:
        isvc = custom.get_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, name)
        if _condition(isvc, "Ready").get("status") == "True":
            return dict(isvc)
        time.sleep(0.5)
    pods = node.core().list_namespaced_pod(ns, label_selector=f"{ISVC_LABEL}={name}").items
    logs = "\n".join(node.logs(p.metadata.name, ns) for p in pods)
    raise AssertionError(f"{ns}/{name} not Ready after {timeout_s:.0f} s: {isvc.get('status')}\n{logs}")


def _versions_through_the_service(url: str, name: str, x: np.ndarray, n: int) -> Counter[str]:
    answered: Counter[str] = Counter()
    with httpx.Client(base_url=url, timeout=10, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        for _ in range(n):
            reply = http.post(f"/v2/models/{name}/infer", json=v2_body(x))
            assert reply.status_code == 200, reply.text
            answered[reply.json()["model_version"]] += 1
    return answered


def test_kserve_runs_our_server_behind_its_service_and_the_target_rolls_out_a_canary(
    k8s_controllers: Controllers,
    mlflow_server: MlflowService,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    node = k8s_controllers.node
    s3 = mlflow_server.s3
    for key in REGISTRATION_ENV:  # registration signs with the cluster's key and audits to its S3 trail
        monkeypatch.setenv(key, s3.env[key])
    name = f"kserve-credit-{uuid.uuid4().hex[:6]}"
    train = generate(SampleDataConfig(rows=800, seed=31))
    holdout = generate(SampleDataConfig(rows=200, seed=32))
    onnx_a = train_onnx(tmp_path / "a", train, seed=0)
    onnx_b = train_onnx(tmp_path / "b", train, seed=1, hidden_units=(16,))
    tracking = TrackingStore.from_uri(mlflow_server.tracking_uri)
    v1 = register_on(mlflow_server.tracking_uri, name, onnx_a, holdout, "kserve-pods")
    tracking.move_alias(name, "champion", v1, None)
    v2 = register_on(mlflow_server.tracking_uri, name, onnx_b, holdout, "kserve-pods")
    from mlops.model.onnx_model import OnnxScorer

    x = OnnxScorer.load(onnx_a / "model.onnx").spec.encode(holdout.head(4))

    with namespace(node, "kserve") as ns:
        _team(node, ns, s3.env)
        api = node.cluster.api_client()
        custom = client.CustomObjectsApi(api)
        # Created as the overlay ships it (adapted to this node), through KServe's own admission webhooks.
        custom.create_namespaced_custom_object(
            GROUP, VERSION, ns, PLURAL, _service_for_this_node(node, mlflow_server, name, ns)
        )
        isvc = _wait_ready(custom, ns, name, node)
        # What the real controller made of it: a Deployment of our container, as sent, and a Service.
        apps = client.AppsV1Api(api)
        (deployment,) = apps.list_namespaced_deployment(ns, label_selector=f"{ISVC_LABEL}={name}").items
        pod_spec = deployment.spec.template.spec
        container = next(c for c in pod_spec.containers if c.name == "kserve-container")
        assert container.image == node.image and container.command == ["mlops", "--workspace", "/tmp/mlops"]
        assert container.resources.requests == {"cpu": "1", "memory": "1Gi"}
        assert (pod_spec.priority_class_name, pod_spec.service_account_name) == (
            "mlops-serving",
            "mlops-serving",
        )
        (pod,) = node.core().list_namespaced_pod(ns, label_selector=f"{ISVC_LABEL}={name}").items
        assert pod.spec.priority == node_priority(node, "mlops-serving")
        (service,) = [
            s
            for s in node.core().list_namespaced_service(ns).items
            if (s.metadata.labels or {}).get(ISVC_LABEL) == name
        ]
        port = next(
            p for p in service.spec.ports if p.target_port in (HTTP_PORT, str(HTTP_PORT)) or p.port == 80
        )
        url = f"http://{service.spec.cluster_ip}:{port.port}"
        print(f"KServe status: {isvc['status']}\nService {service.metadata.name}: {url}")

        # A V2 request through the cluster's Service reaches the champion, with the bearer token only.
        assert httpx.post(f"{url}/v2/models/{name}/infer", json=v2_body(x), timeout=10).status_code == 401
        assert _versions_through_the_service(url, name, x, 3) == Counter({v1: 3})

        target = KServeTarget(
            api,
            ns,
            name,
            name,
            tracking,
            auth_token=TOKEN,
            admin_token=ADMIN_TOKEN,
            timeout_s=240,
            poll_s=0.5,
        )
        split = target.set_traffic(v2, 50)
        assert {s.version: s.percent for s in split.serving} == {v1: 50, v2: 50}, split
        answered = _versions_through_the_service(url, name, x, 40)
        assert set(answered) == {v1, v2} and min(answered.values()) >= 8, answered
        promoted = target.deploy(v2)
        assert [(s.version, s.percent) for s in promoted.serving] == [(v2, 100)], promoted
        assert _versions_through_the_service(url, name, x, 5) == Counter({v2: 5})
        # KServe never saw a canary field: the split lives in the platform's router.
        stored = custom.get_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, name)
        assert "canaryTrafficPercent" not in stored["spec"]["predictor"]
        events = node.cluster.kubectl("describe", "inferenceservice", name, "-n", ns).stdout
        print(events)


def node_priority(node: K8sNode, priority_class: str) -> int:
    """The value of a PriorityClass as the API server stores it."""
    return int(client.SchedulingV1Api(node.cluster.api_client()).read_priority_class(priority_class).value)
