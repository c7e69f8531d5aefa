"""What the tests of training on real pods share (tests/training/test_training_on_pods.py and
test_training_queue_on_pods.py): their marks, the platform runtimes, the training configuration, the S3
settings the pods read, and a launcher for the team namespace. The namespace itself is the ``team`` fixture
of tests/training/conftest.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.services.node import K8sNode
from training.config import ModelConfig, TrainConfig
from training.kubernetes_config import KubernetesJobSettings
from training.kubernetes_launcher import KubernetesLauncher

# The first test of a session may build the platform image (minutes cold) and unpack it on the node.
POD_TEST_MARKS = [pytest.mark.timeout(2400), pytest.mark.slow]


REPO = Path(__file__).resolve().parents[2]
RUNTIMES = REPO / "infra" / "k8s" / "base" / "platform" / "trainingruntime.yaml"


CONFIG = TrainConfig(
    epochs=8,
    batch_size=256,
    learning_rate=3e-3,
    model=ModelConfig(hidden_units=(64, 32), dropout=0.0),
    precision="fp32",
    device="cpu",
    patience=0,
    nproc=2,
)
S3_SETTINGS = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_DEFAULT_REGION",
    "MLOPS_S3_SSE",
    "MLOPS_S3_SSE_KMS_KEY_ID",
)


def _launcher(node: K8sNode, ns: str, staging: str, reports: list[str], **changes: Any) -> KubernetesLauncher:
    settings = KubernetesJobSettings(
        namespace=ns,
        staging_uri=staging,
        workers=2,
        cpu_per_worker="500m",
        memory_per_worker="2Gi",
        training_image=node.image,
        poll_interval_s=0.5,
        time_limit_hours=0.5,
    ).model_copy(update=changes)
    return KubernetesLauncher(settings, api_client=node.cluster.api_client(), report=reports.append)
