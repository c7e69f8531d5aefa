"""The InferenceService the platform runs: KServe RawDeployment mode, the platform image's ``mlops serve`` as the predictor.

One source for the object the KServe target creates when the service is absent and the one
the overlays ship (``infra/k8s/base/team/inferenceservice.yaml``; a test holds them equal).
The predictor has exactly one implementation (``containers``, never ``model``): KServe refuses
two. The server follows ``models:/<name>@<alias>`` through the MLflow tracking server, which
hands out the artifacts from the store the pod reads with its own S3 credentials, so there is no
``storageUri`` for KServe's storage initializer to fetch (it cannot read ``mlflow-artifacts:/``);
every version is verified against the signing public key before it loads.

Why RawDeployment: KServe splits traffic between revisions only in Serverless (Knative) mode,
which routes one port per container and runs each revision in its own pods, so the per-version
``mlops_serving_*`` counters the rollout analysis compares would sit in different pods behind one
URL. In RawDeployment the platform's own rollout router splits (and shadows) inside every
server process: both versions' counters come from the same ``/metrics``, gRPC keeps its port
(8081 beside HTTP 8080), and KServe's ``canaryTrafficPercent`` is never written (the mode ignores it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mlops.vocabulary import CHAMPION

DEPLOYMENT_MODE_ANNOTATION = "serving.kserve.io/deploymentMode"
DEPLOYMENT_MODE = "RawDeployment"
PLAIN_DEPLOYMENT_MODES = frozenset({DEPLOYMENT_MODE, "Standard"})
"""The mode's names: KServe 0.15 and later call it ``Standard`` and their admission webhook rewrites the
older ``RawDeployment`` (which the platform writes, and every KServe release accepts) to it."""
CONTAINER_NAME = "kserve-container"
HTTP_PORT = 8080
GRPC_PORT = 8081
ISVC_LABEL = "serving.kserve.io/inferenceservice"
"""Label KServe puts on the predictor pods of an InferenceService (the target finds them by it)."""


@dataclass(frozen=True)
class PredictorSpec:
    """What differs between sites; the rest of the predictor is the platform's."""

    image: str
    tracking_uri: str = "http://mlflow.mlops-system.svc.cluster.local:5000"
    s3_endpoint_url: str = "https://s3.eu-west-1.amazonaws.com"
    request_log_uri: str = "s3://mlops/request-logs"
    max_replicas: int = 4


def predictor(model_name: str, alias: str, spec: PredictorSpec) -> dict[str, Any]:
    """The predictor of the platform's InferenceService for ``models:/<model_name>@<alias>``."""
    secret_env = [
        {"name": env, "valueFrom": {"secretKeyRef": {"name": "mlops-serving", "key": key}}}
        for env, key in (
            ("AWS_ACCESS_KEY_ID", "aws-access-key-id"),
            ("AWS_SECRET_ACCESS_KEY", "aws-secret-access-key"),
        )
    ]
    container = {
        "name": CONTAINER_NAME,
        "image": spec.image,
        "command": ["mlops", "--workspace", "/tmp/mlops"],
        "args": [
            "serve",
            f"--model-name={model_name}",
            f"--alias={alias}",
            "--host=0.0.0.0",
            f"--port={HTTP_PORT}",
            f"--grpc-port={GRPC_PORT}",
            f"--tracking-uri={spec.tracking_uri}",
            "--model-cache-dir=/tmp/model-cache",
            f"--request-log-uri={spec.request_log_uri}",
            "--request-log-sample-rate=0.1",
            "--reload-interval-s=30",
            "--max-batch-size=64",
            "--max-queue-delay-ms=0",
            "--intra-op-threads=1",
            "--auth-token-file=/var/run/secrets/mlops-serving/token",
            # RawDeployment: the server's own rollout router splits traffic and the target sets its weights
            # over the admin route, which on a pod IP needs a credential of its own (least privilege).
            "--admin-token-file=/var/run/secrets/mlops-serving/admin-token",
        ],
        "env": [
            {"name": "MLFLOW_S3_ENDPOINT_URL", "value": spec.s3_endpoint_url},
            {"name": "AWS_ENDPOINT_URL", "value": spec.s3_endpoint_url},
            *secret_env,
            {"name": "MLOPS_SIGNING_PUBLIC_KEY", "value": "/var/run/secrets/mlops-signing/signing.pub"},
        ],
        "ports": [
            # Named: KServe copies both into the predictor's Service, where two ports must each have a name.
            {"name": "http1", "containerPort": HTTP_PORT, "protocol": "TCP"},
            {"name": "grpc", "containerPort": GRPC_PORT, "protocol": "TCP"},
        ],
        "readinessProbe": {"httpGet": {"path": "/v2/health/ready", "port": HTTP_PORT}, "periodSeconds": 5},
        "livenessProbe": {"httpGet": {"path": "/v2/health/live", "port": HTTP_PORT}, "periodSeconds": 10},
        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "2Gi"}},
        "volumeMounts": [
            {"name": "serving-secret", "mountPath": "/var/run/secrets/mlops-serving", "readOnly": True},
            {"name": "signing-public-key", "mountPath": "/var/run/secrets/mlops-signing", "readOnly": True},
        ],
    }
    return {
        "labels": {"mlops.platform/workload": "serving"},
        "priorityClassName": "mlops-serving",
        "serviceAccountName": "mlops-serving",
        "minReplicas": 1,
        "maxReplicas": spec.max_replicas,
        "containerConcurrency": 0,
        "containers": [container],
        "volumes": [
            {
                "name": "serving-secret",
                "secret": {
                    "secretName": "mlops-serving",
                    "items": [
                        {"key": "token", "path": "token"},
                        {"key": "admin-token", "path": "admin-token"},
                    ],
                },
            },
            {
                "name": "signing-public-key",
                "secret": {
                    "secretName": "mlops-signing",
                    "items": [{"key": "signing.pub", "path": "signing.pub"}],
                },
            },
        ],
    }


def inference_service(
    name: str, namespace: str, model_name: str, spec: PredictorSpec, alias: str = CHAMPION
) -> dict[str, Any]:
    """The whole InferenceService: RawDeployment, scraped by Prometheus, the platform predictor."""
    return {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/part-of": "mlops"},
            "annotations": {
                DEPLOYMENT_MODE_ANNOTATION: DEPLOYMENT_MODE,
                "prometheus.io/scrape": "true",
                "prometheus.io/port": str(HTTP_PORT),
                "prometheus.io/path": "/metrics",
            },
        },
        "spec": {"predictor": predictor(model_name, alias, spec)},
    }
