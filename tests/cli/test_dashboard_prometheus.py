"""The Grafana dashboard's serving panels against a real Prometheus scraping a live `mlops serve`.

A renamed metric or label blanks a panel silently in Grafana; here every serving expression of
``infra/k8s/base/platform/dashboards/mlops.json`` must return data. Prometheus (Debian's 2.42) scrapes
the server every second with the ``namespace`` label the Prometheus operator's ServiceMonitor adds;
the server answers real traffic: two versions (a canary through the rollout admin route) and
some bad requests, so the per-version and per-reason panels have something to show.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from delivery.targets.local import LocalServerTarget
from tests.services.plugin import PrometheusService
from tests.serving.conftest import store
from tests.support.serving import DemoStore, encoded, register, running_server, v2_body

__all__ = ["store"]
pytestmark = pytest.mark.slow
DASHBOARD = (
    Path(__file__).resolve().parents[2] / "infra" / "k8s" / "base" / "platform" / "dashboards" / "mlops.json"
)
NAMESPACE = "team-dashboard"
MODEL = "dashboard-model"


def serving_panels() -> list[tuple[str, str]]:
    dashboard = json.loads(DASHBOARD.read_text())
    return [
        (panel["title"], target["expr"])
        for panel in dashboard["panels"]
        for target in panel.get("targets", [])
        if "mlops_serving_" in target["expr"]
    ]


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


def _wait_for_data(prometheus: PrometheusService, deadline_s: float) -> dict[str, str]:
    """Query every serving expression until each returns a non-empty vector; those that never did."""
    deadline = time.monotonic() + deadline_s
    pending = dict(enumerate(serving_panels()))
    while pending and time.monotonic() < deadline:
        for index, (_, expr) in list(pending.items()):
            if prometheus.query(concrete(expr)):
                del pending[index]
        time.sleep(1)
    return {title: expr for title, expr in pending.values()}
