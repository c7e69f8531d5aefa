"""LocalServerTarget against a real `mlops serve` subprocess and a real MLflow registry.

Deploying moves the alias; the target returns only once the server itself answers
with the new version, and rollback walks the registry's replaced_by history back.
set_traffic runs a challenger beside the champion inside the same server.
"""

from __future__ import annotations

import httpx
import numpy as np
import pytest

from delivery.targets.base import DeploymentError, DeploymentTarget, TrafficShare
from delivery.targets.local import LocalServerTarget
from mlops.vocabulary import PROMOTED_AT_TAG, REPLACED_BY_TAG
from tests.support.serving import DemoStore, direct, encoded, register, running_server, v2_body

pytestmark = pytest.mark.slow


def infer(url: str, name: str, x: np.ndarray) -> tuple[str, list[float]]:
    response = httpx.post(f"{url}/v2/models/{name}/infer", json=v2_body(x), timeout=10)
    assert response.status_code == 200, response.text
    body = response.json()
    return body["model_version"], body["outputs"][0]["data"]


def test_deploy_set_traffic_and_rollback_move_what_the_server_answers_with(store: DemoStore) -> None:
    name = "target-model"
    assert register(store, name, store.onnx_a) == "1"  # champion
    assert register(store, name, store.onnx_b, alias=None) == "2"
    client = store.tracking._client
    x = encoded(store, 3, offset=40)
    expected = {"1": direct(store.onnx_a, x), "2": direct(store.onnx_b, x)}
    assert not np.allclose(expected["1"], expected["2"]), "the two versions must be distinguishable"

    flags = ("--model-name", name, "--reload-interval-s", "0.2", "--no-request-log")
    with running_server(store, *flags) as server:
        target: DeploymentTarget = LocalServerTarget(
            server.url, store.workspace.tracking_uri, name, timeout_s=60
        )
        before = target.current()
        assert before.serving == (TrafficShare("1", 100),) and before.desired_version == "1"
        assert before.converged

        status = target.deploy("2")
        assert status.serving == (TrafficShare("2", 100),) and status.converged
        assert str(client.get_model_version_by_alias(name, "champion").version) == "2"
        assert client.get_model_version(name, "1").tags[REPLACED_BY_TAG] == "2"
        assert PROMOTED_AT_TAG in client.get_model_version(name, "2").tags
        version, data = infer(server.url, name, x)  # deploy returned only once the server had swapped
        assert version == "2"
        np.testing.assert_allclose(data, expected["2"], rtol=1e-6)

        split = target.set_traffic("1", 50)  # version 1 back as a challenger beside champion 2
        assert split.serving == (TrafficShare("2", 50), TrafficShare("1", 50)) and not split.converged
        answered = {infer(server.url, name, x)[0] for _ in range(40)}
        assert answered == {"1", "2"}
        assert target.set_traffic("1", 0).serving == (TrafficShare("2", 100),)  # challenger removed
        assert target.set_traffic("1", 0).serving == (
            TrafficShare("2", 100),
        )  # already at 0 %: nothing to do
        with pytest.raises(DeploymentError, match="version 2 is the champion here"):
            target.set_traffic("2", 50)
        with pytest.raises(DeploymentError, match="version '7': not in the registry"):
            target.deploy("7")
        assert str(client.get_model_version_by_alias(name, "champion").version) == "2"

        status = target.rollback()
        assert status.serving == (TrafficShare("1", 100),) and status.desired_version == "1"
        version, data = infer(server.url, name, x)
        assert version == "1"
        np.testing.assert_allclose(data, expected["1"], rtol=1e-6)
        assert client.get_model_version(name, "2").tags[REPLACED_BY_TAG] == "1"

        canary = target.set_traffic("2", 100)  # a canary at 100 %: answers all, the alias stays on 1
        assert canary.serving == (TrafficShare("2", 100),) and canary.desired_version == "1"
        assert not canary.converged
        assert infer(server.url, name, x)[0] == "2"
        assert target.rollback().serving == (TrafficShare("1", 100),)  # rollback drops the canary first


def test_deploy_fails_when_the_server_does_not_follow(store: DemoStore) -> None:
    name = "target-frozen-model"
    register(store, name, store.onnx_a)
    register(store, name, store.onnx_b, alias=None)
    # Hot reload off: the alias moves, the server keeps answering with version 1.
    with running_server(
        store, "--model-name", name, "--reload-interval-s", "0", "--no-request-log"
    ) as server:
        target = LocalServerTarget(server.url, store.workspace.tracking_uri, name, timeout_s=2)
        with pytest.raises(DeploymentError, match="still answers with version 1 after 2 s"):
            target.deploy("2")
        status = target.current()
        assert status.desired_version == "2" and status.serving == (TrafficShare("1", 100),)
        assert not status.converged
    with pytest.raises(DeploymentError, match="is unreachable"):
        target.current()


def test_rollback_needs_a_replaced_version(store: DemoStore) -> None:
    name = "target-first-model"
    register(store, name, store.onnx_a)
    target = LocalServerTarget("http://127.0.0.1:9", store.workspace.tracking_uri, name)
    with pytest.raises(DeploymentError, match="version 1: no version records mlops.replaced_by=1"):
        target.rollback()


def test_the_target_moves_traffic_with_the_admin_token_and_not_with_the_inference_token(
    store: DemoStore,
) -> None:
    name = "admin-token-model"
    register(store, name, store.onnx_a)
    register(store, name, store.onnx_b, alias=None)
    flags = ("--model-name", name, "--reload-interval-s", "0", "--no-request-log")
    with running_server(store, *flags, "--auth-token", "score", "--admin-token", "steer") as server:
        uri = store.workspace.tracking_uri
        scorer_only = LocalServerTarget(server.url, uri, name, auth_token="score")
        with pytest.raises(DeploymentError, match="answered 403: .*needs the admin token"):
            scorer_only.set_traffic("2", 10)
        target = LocalServerTarget(server.url, uri, name, auth_token="score", admin_token="steer")
        assert target.set_traffic("2", 10).serving == (TrafficShare("1", 90), TrafficShare("2", 10))
        assert "mlops_serving_requests_total" in target.metrics_text(), (
            "/metrics still takes the inference token"
        )
        assert target.set_traffic("2", 0).serving == (TrafficShare("1", 100),)
