"""register-model as a pod on a real node, from the compiled training pipeline, signing with a mounted Secret.

The container command, its arguments and its Kubernetes platform config (the signing key Secret as a
volume, the key's path from a pod annotation, the S3 credentials from a Secret) are the compiled
YAML's; the KFP driver that would turn the platform config into the pod is the stand-in
:func:`tests.support.pods.apply_platform_config` (it refuses keys it does not know). The pod gets no
credential or key in plain environment: what it signs with and what it writes with come from the
Secrets. The signature it wrote verifies here with the public key; a version registered without the
Secret is refused, so nothing unsigned becomes challenger.
"""

from __future__ import annotations

import io
import time
import uuid
from pathlib import Path

import pytest
import torch
from kubernetes import client

from mlops.data.features import FeatureSpec
from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
from mlops.governance.signing import SignatureError
from mlops.tracking.store import TrackingStore
from mlops.vocabulary import CHALLENGER, SIGNATURE_URI_TAG
from pipelines.training.pipeline import FORM as TRAINING_FORM
from tests.services.node import K8sNode
from tests.services.plugin import MlflowService
from tests.support.pods import (
    apply_platform_config,
    compiled_container,
    component_pod,
    create_tracking_secret,
    executor_input,
    executor_output,
    namespace,
    platform_config,
    task_parameters,
)
from training.config import ModelConfig
from training.model import TabularNet
from training.onnx_export import export_onnx

pytestmark = [pytest.mark.timeout(2400), pytest.mark.slow]
TRAINING_YAML = Path(__file__).resolve().parents[3] / "pipelines" / "training" / "training.yaml"
TASK = "register-model"
PLAIN_ENV_KEPT_OUT = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "MLOPS_SIGNING_KEY",
    "MLOPS_SIGNING_PUBLIC_KEY",
)


def _stage_inputs(
    mlflow_server: MlflowService, run_id: str, tmp_path: Path
) -> dict[str, tuple[str, str, dict]]:
    """The upstream tasks' outputs in S3: export-onnx-model's model folder and train-model's test split."""
    frame = generate(SampleDataConfig(rows=400, seed=8))
    torch.manual_seed(0)
    model = TabularNet(FeatureSpec.fit(frame, SAMPLE_SCHEMA), ModelConfig(hidden_units=(8,))).eval()
    onnx = export_onnx(model, tmp_path / "model.onnx")
    s3 = mlflow_server.s3
    root = f"pipeline-root/{run_id}"
    s3.client().upload_file(str(onnx), s3.bucket, f"{root}/export-onnx-model/onnx_model/model.onnx")
    data = io.BytesIO()
    frame.to_parquet(data, index=False)
    s3.client().put_object(Bucket=s3.bucket, Key=f"{root}/train-model/test_data", Body=data.getvalue())
    return {
        "onnx_model": ("system.Model", f"s3://{s3.bucket}/{root}/export-onnx-model/onnx_model", {}),
        "test_data": (
            "system.Dataset",
            f"s3://{s3.bucket}/{root}/train-model/test_data",
            {"split": "test", "schema": {"label": SAMPLE_SCHEMA.label}},
        ),
    }


def _run_register(
    node: K8sNode, mlflow_server: MlflowService, tmp_path: Path, model_name: str, *, with_signing_secret: bool
) -> tuple[object, str, str]:
    s3 = mlflow_server.s3
    run_id = f"pod-{uuid.uuid4().hex[:8]}"
    parameters = task_parameters(
        TRAINING_YAML,
        TASK,
        TRAINING_FORM.arguments(
            {
                "tracking.tracking_uri": node.from_pod(mlflow_server.tracking_uri),
                "tracking.experiment": "pods",
                "registration.model_name": model_name,
            }
        ),
        {
            "dataset_digest": "d" * 64,
            "suite_version": "1.0.0",
            "run_id": "train-run-in-pod",
            "feature_lineage": "",
        },
        run_id,
    )
    executor = executor_input(
        parameters, {}, ["version", "onnx_sha256"], _stage_inputs(mlflow_server, run_id, tmp_path)
    )
    # Only settings travel as plain environment; the credentials and the key come from the Secrets.
    env = {k: v for k, v in s3.env.items() if k not in PLAIN_ENV_KEPT_OUT}
    env["MLFLOW_S3_ENDPOINT_URL"] = node.from_pod(s3.endpoint)
    # The server presigns S3 URLs for the endpoint it knows (127.0.0.1 here, unreachable from a pod):
    # download through the server instead, as a pod that cannot reach S3 directly must.
    env["MLFLOW_ENABLE_PROXY_MULTIPART_DOWNLOAD"] = "false"
    pod = apply_platform_config(
        component_pod(node, TASK, compiled_container(TRAINING_YAML, TASK), executor, env),
        platform_config(TRAINING_YAML, TASK),
    )
    with namespace(node, "register") as ns:
        core = node.core()
        create_tracking_secret(node, ns, s3.env)
        if with_signing_secret:
            key = Path(s3.env["MLOPS_SIGNING_KEY"]).read_text(encoding="utf-8")
            core.create_namespaced_secret(
                ns,
                client.V1Secret(
                    metadata=client.V1ObjectMeta(name="mlops-signing"), string_data={"signing.key": key}
                ),
            )
        core.create_namespaced_pod(ns, pod)
        if with_signing_secret:
            done = node.wait_for_pod(TASK, ns, timeout_s=300)
            return done, node.logs(TASK, ns), run_id
        # Without the Secret the kubelet cannot mount the volume: the pod never starts (nothing runs).
        event = _wait_for_mount_failure(node, ns)
        return core.read_namespaced_pod(TASK, ns), event, run_id


def _wait_for_mount_failure(node: K8sNode, ns: str, timeout_s: float = 120) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        events = node.core().list_namespaced_event(ns).items
        for event in events:
            if event.reason == "FailedMount" and "mlops-signing" in (event.message or ""):
                return str(event.message)
        time.sleep(1)
    raise AssertionError(f"no FailedMount event for the signing Secret in {ns} after {timeout_s:.0f} s")


def test_register_task_from_the_compiled_yaml_signs_with_the_mounted_key(
    k8s_node: K8sNode, mlflow_server: MlflowService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model_name = f"pod-signed-{uuid.uuid4().hex[:6]}"
    pod, logs, _ = _run_register(k8s_node, mlflow_server, tmp_path, model_name, with_signing_secret=True)
    assert pod.status.phase == "Succeeded", logs
    declared = {e.name: e for e in pod.spec.containers[0].env}
    assert declared["MLOPS_SIGNING_KEY"].value_from.field_ref is not None  # from the annotation, not a value
    assert declared["AWS_ACCESS_KEY_ID"].value_from.secret_key_ref.name == "mlops-tracking"
    version = executor_output(logs)["parameterValues"]["version"]

    store = TrackingStore.from_uri(mlflow_server.tracking_uri)
    tags = store.model_version(model_name, version).tags
    assert tags[SIGNATURE_URI_TAG], tags
    # The signature verifies with the public key of the Secret's private key...
    monkeypatch.setenv("MLOPS_SIGNING_PUBLIC_KEY", mlflow_server.s3.env["MLOPS_SIGNING_PUBLIC_KEY"])
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "MLFLOW_S3_ENDPOINT_URL"):
        monkeypatch.setenv(key, mlflow_server.s3.env[key])
    local = store.download_version(model_name, version, tmp_path / "downloaded")
    store.verify_version(model_name, version, local)
    # ... and not once the files changed.
    onnx = next(local.rglob("model.onnx"))
    onnx.write_bytes(onnx.read_bytes() + b"\0")
    with pytest.raises(SignatureError, match="signature does not verify with the public key"):
        store.verify_version(model_name, version, local)
    assert store.alias_version(model_name, CHALLENGER) in (None, version)


def test_register_task_without_the_signing_secret_never_runs(
    k8s_node: K8sNode, mlflow_server: MlflowService, tmp_path: Path
) -> None:
    model_name = f"pod-unsigned-{uuid.uuid4().hex[:6]}"
    pod, event, _ = _run_register(k8s_node, mlflow_server, tmp_path, model_name, with_signing_secret=False)
    assert pod.status.phase == "Pending" and 'secret "mlops-signing" not found' in event, event
    names = [
        m.name for m in TrackingStore.from_uri(mlflow_server.tracking_uri)._client.search_registered_models()
    ]
    assert model_name not in names
