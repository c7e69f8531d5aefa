"""The harness itself: a real API server that enforces schemas and RBAC (what later tests rely on)."""

from __future__ import annotations

import pytest


def test_api_server_stores_objects_and_enforces_rbac(kube_apiserver):
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    api = client.CoreV1Api(kube_apiserver.api_client())
    api.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="harness")))
    api.create_namespaced_config_map(
        "harness", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="c"), data={"k": "v"})
    )
    assert api.read_namespaced_config_map("c", "harness").data == {"k": "v"}
    # RBAC is on: a service account with no binding may not read the config map.
    api.create_namespaced_service_account(
        "harness", client.V1ServiceAccount(metadata=client.V1ObjectMeta(name="nobody"))
    )
    denied = kube_apiserver.kubectl(
        "auth",
        "can-i",
        "get",
        "configmaps",
        "-n",
        "harness",
        "--as=system:serviceaccount:harness:nobody",
        check=False,
    )
    assert denied.stdout.strip() == "no"
    with pytest.raises(ApiException, match="Conflict|AlreadyExists"):
        api.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="harness")))
