"""validate-data as a pod of the platform image on a real node, as a KFP backend would run it.

The container command and arguments are the compiled training pipeline's; the data and the
output artifacts are in the real S3 (Ceph RGW); the task logs to a real MLflow server. The pod
reaches both at the pod network's gateway. Only the KFP launcher is a stand-in (it cannot run here).
"""

from __future__ import annotations

import hashlib
import io
import json
import uuid
from pathlib import Path

import pandas as pd
import pytest

from mlops.data.sample_data import SampleDataConfig, generate
from mlops.tracking.store import TrackingStore
from mlops.vocabulary import PIPELINE_RUN_ID_TAG
from pipelines.training.pipeline import FORM as TRAINING_FORM
from tests.services.node import K8sNode
from tests.services.plugin import MlflowService
from tests.support.pods import (
    compiled_container,
    component_pod,
    executor_input,
    executor_output,
    namespace,
    task_parameters,
)

# The first test of a session may build the platform image (minutes cold) and unpack it on the node.
pytestmark = pytest.mark.timeout(2400)
TRAINING_YAML = Path(__file__).resolve().parents[3] / "pipelines" / "training" / "training.yaml"
OUTPUTS = {"dataset": "system.Dataset", "report_html": "system.HTML", "report_json": "system.Artifact"}


def _run_validate_data(node: K8sNode, mlflow_server: MlflowService, frame: pd.DataFrame, run_id: str):
    s3 = mlflow_server.s3
    data = io.BytesIO()
    frame.to_parquet(data, index=False)
    data_key = f"pods/{run_id}/input/sample.parquet"
    s3.client().put_object(Bucket=s3.bucket, Key=data_key, Body=data.getvalue())
    task_root = f"s3://{s3.bucket}/pipeline-root/{run_id}/validate-data"
    parameters = task_parameters(
        TRAINING_YAML,
        "validate-data",
        # The run's arguments as the form holds them: the tracking section with two settings changed.
        TRAINING_FORM.arguments(
            {
                "tracking.tracking_uri": node.from_pod(mlflow_server.tracking_uri),
                "tracking.experiment": "pods",
            }
        ),
        {"data_uri": f"s3://{s3.bucket}/{data_key}", "is_sample": True},
        run_id,
    )
    executor = executor_input(
        parameters,
        {name: (title, f"{task_root}/{name}") for name, title in OUTPUTS.items()},
        ["dataset_digest", "suite_version"],
    )
    env = {**s3.env, "MLFLOW_S3_ENDPOINT_URL": node.from_pod(s3.endpoint)}
    env.pop("AWS_ENDPOINT_URL", None)
    container = compiled_container(TRAINING_YAML, "validate-data")
    with namespace(node, "validate") as ns:
        node.core().create_namespaced_pod(ns, component_pod(node, "validate-data", container, executor, env))
        pod = node.wait_for_pod("validate-data", ns, timeout_s=240)
        logs = node.logs("validate-data", ns)
    return pod, logs, data.getvalue(), task_root


@pytest.mark.slow
def test_validate_data_runs_in_a_pod_with_s3_artifacts_and_a_real_mlflow_run(
    k8s_node: K8sNode, mlflow_server: MlflowService
) -> None:
    run_id = f"pod-{uuid.uuid4().hex[:8]}"
    frame = generate(SampleDataConfig(rows=800, seed=5))
    pod, logs, raw, task_root = _run_validate_data(k8s_node, mlflow_server, frame, run_id)
    assert pod.status.phase == "Succeeded", logs
    assert pod.spec.containers[0].image == k8s_node.image

    # Output parameters and artifact metadata, as the executor wrote them for the launcher.
    output = executor_output(logs)
    digest = hashlib.sha256(raw).hexdigest()
    assert output["parameterValues"]["dataset_digest"] == digest
    metadata = output["artifacts"]["dataset"]["artifacts"][0]["metadata"]
    assert metadata["sha256"] == digest and metadata["format"] == "parquet"

    # The artifacts are in S3 at the URIs the executor input named.
    s3 = mlflow_server.s3
    prefix = task_root.removeprefix(f"s3://{s3.bucket}/")
    body = s3.client().get_object(Bucket=s3.bucket, Key=f"{prefix}/dataset")["Body"].read()
    pd.testing.assert_frame_equal(pd.read_parquet(io.BytesIO(body)), frame)
    report = json.loads(s3.client().get_object(Bucket=s3.bucket, Key=f"{prefix}/report_json")["Body"].read())
    assert report["success"] is True and report["rows"] == len(frame)
    assert b"<table" in s3.client().get_object(Bucket=s3.bucket, Key=f"{prefix}/report_html")["Body"].read()

    # The pod logged to the MLflow server (its reports stored through the server, in S3).
    client = TrackingStore.from_uri(mlflow_server.tracking_uri)._client
    experiment = client.get_experiment_by_name("pods")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id], f"tags.`{PIPELINE_RUN_ID_TAG}` = '{run_id}'")
    assert len(runs) == 1 and runs[0].info.status == "FINISHED"
    assert runs[0].data.params["dataset_digest"] == digest
    assert runs[0].data.metrics["rows"] == len(frame) and runs[0].data.metrics["success"] == 1.0
    logged = {a.path for a in client.list_artifacts(runs[0].info.run_id, "validation")}
    assert logged == {"validation/report.html", "validation/report.json"}


@pytest.mark.slow
def test_validate_data_pod_fails_on_bad_data_and_uploads_no_dataset(
    k8s_node: K8sNode, mlflow_server: MlflowService
) -> None:
    run_id = f"pod-{uuid.uuid4().hex[:8]}"
    frame = generate(SampleDataConfig(rows=300, seed=6)).drop(columns=["credit_score"])
    pod, logs, _, task_root = _run_validate_data(k8s_node, mlflow_server, frame, run_id)
    assert pod.status.phase == "Failed"
    assert "credit_score" in logs and "no output uploaded" in logs
    s3 = mlflow_server.s3
    assert s3.keys(task_root.removeprefix(f"s3://{s3.bucket}/")) == []
    client = TrackingStore.from_uri(mlflow_server.tracking_uri)._client
    experiment = client.get_experiment_by_name("pods")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id], f"tags.`{PIPELINE_RUN_ID_TAG}` = '{run_id}'")
    assert len(runs) == 1 and runs[0].info.status == "FAILED"
    assert runs[0].data.metrics["success"] == 0.0
