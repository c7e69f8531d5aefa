"""The team namespace the tests of training on real pods run in (test_training_on_pods.py and
test_training_queue_on_pods.py); test_kubernetes_admission.py has a ``team`` of its own, which overrides
this one in that module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.services.node import Controllers
from tests.services.plugin import MlflowService
from tests.support.k8s_controller import apply_team_rules
from tests.support.pods import create_tracking_secret, namespace
from tests.training.pods_training import RUNTIMES, S3_SETTINGS


@pytest.fixture
def team(
    k8s_controllers: Controllers, mlflow_server: MlflowService, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[str, str]]:
    """A team namespace under the dev overlay's rules, with the S3 credentials Secret the pods read; the
    platform runtimes applied; the S3 endpoint as pods reach it."""
    node = k8s_controllers.node
    node.cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(RUNTIMES))
    s3 = mlflow_server.s3
    for key in S3_SETTINGS:
        monkeypatch.setenv(key, s3.env[key])
    # The task forwards its S3 endpoint to the pods: give it the address they (and this machine) reach.
    monkeypatch.setenv("MLFLOW_S3_ENDPOINT_URL", node.from_pod(s3.endpoint))
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with namespace(node, "team-train") as ns:
        # The ClusterQueue serves namespaces labelled as teams (infra/k8s/base/team/namespace.yaml).
        node.cluster.kubectl("label", "namespace", ns, "mlops.platform/role=team")
        apply_team_rules(node.cluster, ns)  # the dev overlay's LimitRange, ResourceQuota and queues
        create_tracking_secret(node, ns, s3.env)
        yield ns, f"s3://{s3.bucket}/training-staging"
