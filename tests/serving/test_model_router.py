"""The ModelRouter seam: a router given to create_app decides which model answers each request.

A two-backend router stands in for a later canary router. The app runs under uvicorn
(real HTTP on a free port) in this process, so the test can hand create_app a router.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import numpy as np
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request

from mlops.origin_facts import file_sha256
from serving.app import create_app
from serving.backend import ModelBackend
from serving.config import ServerConfig
from serving.model_source import ModelArtifact
from serving.reload import ModelHolder
from serving.runtime import LoadedModel, load_model
from tests.support.serving import MODEL, DemoStore, direct, encoded, free_port, v2_body

pytestmark = pytest.mark.slow


def local_model(onnx_dir: Path, version: str) -> LoadedModel:
    path = onnx_dir / "model.onnx"
    return load_model(ModelArtifact(MODEL, version, path, file_sha256(path), {}))


class HeaderRouter:
    """Requests carrying ``x-route: b`` go to the second backend, all others to the primary."""

    def __init__(self, primary: ModelBackend, other: ModelBackend):
        self.primary = primary
        self.other = other
        self.backends = (primary, other)

    def select(self, request: Request) -> tuple[ModelBackend, str | None]:
        return (self.other if request.headers.get("x-route") == "b" else self.primary), None


@contextmanager
def serving(app: Starlette) -> Iterator[str]:
    """``app`` under uvicorn on a free 127.0.0.1 port, lifespan included; stopped on exit."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=server.run, name="uvicorn")
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def test_the_router_given_to_create_app_picks_the_model_per_request(store: DemoStore) -> None:
    config = ServerConfig(tracking_uri="sqlite:///unused.db", max_batch_size=8, request_log_uri="")
    model_a, model_b = local_model(store.onnx_a, "1"), local_model(store.onnx_b, "2")
    routers: list[HeaderRouter] = []

    def make_router(config: ServerConfig, primary: ModelBackend) -> HeaderRouter:
        other = ModelBackend(ModelHolder(model_b), 8, 0.0, False, primary.on_batch)
        routers.append(HeaderRouter(primary, other))
        return routers[-1]

    x = encoded(store, 3, offset=70)
    with (
        serving(create_app(config, model_a, make_router=make_router)) as url,
        httpx.Client(base_url=url) as client,
    ):
        to_a = client.post(f"/v2/models/{MODEL}/infer", json=v2_body(x))
        to_b = client.post(f"/v2/models/{MODEL}/infer", json=v2_body(x), headers={"x-route": "b"})
        metadata_b = client.get(f"/v2/models/{MODEL}", headers={"x-route": "b"})
        metrics = client.get("/metrics").text

    assert to_a.status_code == 200 and to_b.status_code == 200, (to_a.text, to_b.text)
    assert to_a.headers["x-model-version"] == "1" and to_b.headers["x-model-version"] == "2"
    np.testing.assert_allclose(to_a.json()["outputs"][0]["data"], direct(store.onnx_a, x), rtol=1e-6)
    np.testing.assert_allclose(to_b.json()["outputs"][0]["data"], direct(store.onnx_b, x), rtol=1e-6)
    assert metadata_b.json()["versions"] == ["2"]
    assert f'mlops_serving_batch_size_rows_count{{model="{MODEL}",version="2"}} 1.0' in metrics
    assert f'mlops_serving_batch_size_rows_count{{model="{MODEL}",version="1"}} 1.0' in metrics
    # The app started every backend the router may choose, not only the primary: both batch.
    (router,) = routers
    assert all(backend.batcher is not None for backend in router.backends)
