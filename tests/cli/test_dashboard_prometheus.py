"""The Grafana dashboard's panels against a real Prometheus scraping a live `mlops serve` and a live training rank.

A renamed metric or label blanks a panel silently in Grafana; here every serving expression of
``infra/k8s/base/platform/dashboards/mlops.json`` must return data. Prometheus (Debian's 2.42) scrapes
the server every second with the ``namespace`` label the Prometheus operator's ServiceMonitor adds;
the server answers real traffic: two versions (a canary through the rollout admin route) and
some bad requests, so the per-version and per-reason panels have something to show. The training
panels are scraped from rank 0 of a training job started the way the TrainJob's pod starts it
(torchrun, ``training.cluster_worker``, the environment the launcher gives the pod). The GPU panel
reads NVIDIA's DCGM exporter, which needs a GPU: it is not checked here.
"""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from delivery.targets.local import LocalServerTarget
from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
from tests.services.plugin import PrometheusService, _free_port
from tests.serving.conftest import store
from tests.support.serving import DemoStore, encoded, register, running_server, v2_body
from training.config import ModelConfig, TrainConfig, resolve_runtime
from training.data_splits import encode_splits, split_frame
from training.kubernetes_config import KubernetesJobSettings, plan
from training.kubernetes_jobs import environment
from training.launcher import JOB_FILE
from training.loop import WorkerJob
from training.metrics_logger import NullLogger
from training.model import rank_step_macs

__all__ = ["store"]
pytestmark = pytest.mark.slow
DASHBOARD = (
    Path(__file__).resolve().parents[2] / "infra" / "k8s" / "base" / "platform" / "dashboards" / "mlops.json"
)
NAMESPACE = "team-dashboard"
MODEL = "dashboard-model"


def panels(metric_prefix: str) -> list[tuple[str, str]]:
    """(title, expression) of every dashboard query reading metrics named ``metric_prefix…``."""
    dashboard = json.loads(DASHBOARD.read_text())
    return [
        (panel["title"], target["expr"])
        for panel in dashboard["panels"]
        for target in panel.get("targets", [])
        if metric_prefix in target["expr"]
    ]


def serving_panels() -> list[tuple[str, str]]:
    return panels("mlops_serving_")


def concrete(expr: str) -> str:
    """The expression as Grafana sends it for this namespace and model."""
    return expr.replace("$__rate_interval", "20s").replace("$namespace", NAMESPACE).replace("$model", MODEL)


class Traffic(threading.Thread):
    """Valid requests (both versions answer) and malformed ones, until stopped."""

    def __init__(self, url: str, body: dict[str, Any]):
        super().__init__(daemon=True)
        self.url, self.body, self.stop = url, body, threading.Event()
        self.answered: dict[int, int] = {}

    def run(self) -> None:
        with httpx.Client(timeout=10) as http:
            while not self.stop.is_set():
                for payload in (self.body, self.body, self.body, {"inputs": "not a tensor"}):
                    code = http.post(f"{self.url}/v2/models/{MODEL}/infer", json=payload).status_code
                    self.answered[code] = self.answered.get(code, 0) + 1
                time.sleep(0.02)


def test_there_are_serving_panels_to_check() -> None:
    titles = {title for title, _ in serving_panels()}
    assert len(serving_panels()) == 8 and "Errors by reason" in titles and "Model version served" in titles


def test_every_serving_panel_returns_data_from_a_live_server(
    prometheus: PrometheusService, store: DemoStore
) -> None:
    register(store, MODEL, store.onnx_a)
    register(store, MODEL, store.onnx_b, alias=None)
    with running_server(store, "--model-name", MODEL, "--no-request-log") as server:
        LocalServerTarget(server.url, store.workspace.tracking_uri, MODEL).set_traffic("2", 50)
        prometheus.scrape("serving", [server.url.removeprefix("http://")], {"namespace": NAMESPACE})
        traffic = Traffic(server.url, v2_body(encoded(store, 1)))
        traffic.start()
        try:
            missing = _wait_for_data(prometheus, deadline_s=90)
        finally:
            traffic.stop.set()
            traffic.join(timeout=30)
    assert traffic.answered.get(200) and traffic.answered.get(400), traffic.answered
    assert missing == {}, f"panels without data after 90 s: {missing}"
    # Per-version panels show both versions the canary runs.
    rate = prometheus.query(concrete(serving_panels()[0][1]))
    assert {series["metric"]["version"] for series in rate} == {"1", "2"}, rate
    reasons = prometheus.query(concrete(dict(serving_panels())["Errors by reason"]))
    assert {series["metric"]["reason"] for series in reasons} >= {"bad_request"}, reasons


def _wait_for_data(
    prometheus: PrometheusService, deadline_s: float, queries: list[tuple[str, str]] | None = None
) -> dict[str, str]:
    """Query every expression (the serving ones by default) until each returns a non-empty vector;
    those that never did."""
    deadline = time.monotonic() + deadline_s
    pending = dict(enumerate(serving_panels() if queries is None else queries))
    while pending and time.monotonic() < deadline:
        for index, (_, expr) in list(pending.items()):
            if prometheus.query(concrete(expr)):
                del pending[index]
        time.sleep(1)
    return {title: expr for title, expr in pending.values()}


def test_there_are_training_panels_to_check() -> None:
    assert [title for title, _ in panels("mlops_training_")] == [
        "Training samples/s per job",
        "Training epoch and validation AUC",
        "Training epoch and validation AUC",
    ]


def test_every_training_panel_returns_data_from_a_training_rank(
    prometheus: PrometheusService, tmp_path: Path
) -> None:
    job_name = "train-dashboard0001"
    config = TrainConfig(
        epochs=5_000,  # longer than the test looks: it stops the rank once every panel has data
        batch_size=256,
        model=ModelConfig(hidden_units=(16,), dropout=0.0),
        device="cpu",
        patience=0,
    )
    frame = generate(SampleDataConfig(rows=2_000, seed=3))
    data = encode_splits(split_frame(frame, SAMPLE_SCHEMA, config), SAMPLE_SCHEMA)
    job = WorkerJob(
        data=data,
        config=config,
        runtime=resolve_runtime(config, macs_per_step=rank_step_macs(data.spec, config)),
        fingerprint="dashboard",
        checkpoint_dir=None,
        logger=NullLogger(),
    )
    staging = tmp_path / job_name
    staging.mkdir()
    (staging / JOB_FILE).write_bytes(pickle.dumps(job))
    # The pod's environment as the launcher declares it; the metrics port is a free one here (a pod has
    # its own network), and no S3: the job is staged on this machine's disk.
    port = _free_port()
    checked = plan(
        KubernetesJobSettings(namespace=NAMESPACE, staging_uri="s3://mlflow/training", metrics_port=port),
        nproc=1,
    )
    pod_env = {var.name: var.value for var in environment(checked, job_name) if var.value is not None}
    assert pod_env["MLOPS_METRICS_PORT"] == str(port) and pod_env["MLOPS_JOB_NAME"] == job_name
    rank = subprocess.Popen(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=1"]
        + ["-m", "training.cluster_worker", str(staging)],
        env={**os.environ, **pod_env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        # What the PodMonitor's scrape adds: the pod's namespace and name.
        prometheus.scrape("training", [f"127.0.0.1:{port}"], {"namespace": NAMESPACE, "pod": f"{job_name}-0"})
        queries = [(title, concrete(expr)) for title, expr in panels("mlops_training_")]
        missing = _wait_for_data(prometheus, deadline_s=120, queries=queries)
        # The gauges exist (at 0) from the rank's start: wait for a scrape after the first epoch.
        deadline = time.monotonic() + 120
        while True:
            by_metric = {expr: prometheus.query(expr) for _, expr in queries}
            first = [float(series[0]["value"][1]) if series else 0.0 for series in by_metric.values()]
            if (first[0] > 0 and first[1] >= 1) or time.monotonic() > deadline or rank.poll() is not None:
                break
            time.sleep(1)
        running = rank.poll() is None
    finally:
        rank.terminate()  # torchrun stops its rank (in a session of its own) and exits
        try:
            log = rank.communicate(timeout=60)[0]
        finally:
            if rank.poll() is None:
                os.killpg(rank.pid, signal.SIGKILL)
    assert running, f"the training rank ended before the panels were checked:\n{log[-3000:]}"
    assert missing == {}, f"training panels without data after 120 s: {missing}\n{log[-3000:]}"
    for expr, series in by_metric.items():
        assert [s["metric"]["job_name"] for s in series] == [job_name], (expr, series)
    samples, epoch, auc = (float(series[0]["value"][1]) for series in by_metric.values())
    assert samples > 0 and epoch >= 1 and 0.0 <= auc <= 1.0, by_metric
