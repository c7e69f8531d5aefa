"""Hot reload under load, and the digest check that refuses altered artifacts (at start and on reload)."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import pytest
from prometheus_client.parser import text_string_to_metric_families

from serving.model_source import DigestMismatchError, RegisteredModelSource
from tests.support.serving import (
    DemoStore,
    clean_env,
    direct,
    encoded,
    free_port,
    register,
    running_server,
    serve_command,
    v2_body,
)

pytestmark = pytest.mark.slow


def tamper(store: DemoStore, name: str, version: str) -> Path:
    """Change the stored model.onnx of a registered version behind the registry's back."""
    uri = store.tracking.version_download_uri(name, version)
    path = Path(uri.removeprefix("file://")) / "model.onnx"
    with path.open("ab") as handle:
        handle.write(b"\0")
    return path


def metric(url: str, name: str, **labels: str) -> float:
    for family in text_string_to_metric_families(httpx.get(f"{url}/metrics").text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return float(sample.value)
    return 0.0


def test_alias_move_swaps_model_under_load_without_errors(store: DemoStore) -> None:
    name = "reload-model"
    register(store, name, store.onnx_a)
    x = encoded(store, 4, offset=10)
    expected = {"1": direct(store.onnx_a, x), "2": direct(store.onnx_b, x)}
    assert not np.allclose(expected["1"], expected["2"]), "the two versions must be distinguishable"

    flags = ("--model-name", name, "--reload-interval-s", "0.2", "--no-request-log", "--max-batch-size", "8")
    with running_server(store, *flags) as server:
        stop = threading.Event()
        seen: list[list[tuple[int, str, list[float]]]] = [[] for _ in range(4)]

        def hammer(out: list[tuple[int, str, list[float]]]) -> None:
            with httpx.Client(base_url=server.url, timeout=10) as client:
                while not stop.is_set():
                    try:
                        response = client.post(f"/v2/models/{name}/infer", json=v2_body(x))
                    except httpx.HTTPError as exc:  # a dropped connection is a failure too
                        out.append((-1, repr(exc), []))
                        continue
                    body = response.json()
                    if response.status_code == 200:
                        out.append((200, body["model_version"], body["outputs"][0]["data"]))
                    else:
                        out.append((response.status_code, str(body), []))

        threads = [threading.Thread(target=hammer, args=(out,)) for out in seen]
        for thread in threads:
            thread.start()
        try:
            time.sleep(1.0)
            assert register(store, name, store.onnx_b) == "2"  # moves alias champion to version 2
            deadline = time.monotonic() + 30
            while not any(v == "2" for out in seen for _, v, _ in out[-5:]) and time.monotonic() < deadline:
                time.sleep(0.1)
            time.sleep(1.0)  # keep the load on after the swap
        finally:
            stop.set()
            for thread in threads:
                thread.join()

        results = [r for out in seen for r in out]
        failures = [r for r in results if r[0] != 200]
        assert not failures, failures[:5]
        for out in seen:  # per client, versions only move forward: 1...1 2...2
            versions = [v for _, v, _ in out]
            assert versions == sorted(versions) and versions[0] == "1" and versions[-1] == "2", versions[:3]
        for _, version, data in results:
            np.testing.assert_allclose(data, expected[version], rtol=1e-6)
        assert metric(server.url, "mlops_serving_reloads_total", outcome="swapped") == 1
        assert metric(server.url, "mlops_serving_model_info", version="2") == 1
        assert metric(server.url, "mlops_serving_model_info", version="1") == 0

        # An altered version is refused; the server keeps serving the last verified one.
        register(store, name, store.onnx_a, alias=None)
        tamper(store, name, "3")
        store.tracking.point_alias(name, "champion", "3")
        deadline = time.monotonic() + 30
        while metric(server.url, "mlops_serving_reloads_total", outcome="refused") < 1:
            assert time.monotonic() < deadline, "the tampered version was never checked"
            time.sleep(0.1)
        response = httpx.post(f"{server.url}/v2/models/{name}/infer", json=v2_body(x))
        assert response.status_code == 200 and response.json()["model_version"] == "2"
    assert "refusing to load reload-model version 3" in server.log()


def test_server_refuses_to_start_on_a_digest_mismatch(store: DemoStore) -> None:
    name = "tampered-model"
    register(store, name, store.onnx_a)
    tamper(store, name, "1")
    command = serve_command(store, free_port(), "--model-name", name, "--no-request-log")
    result = subprocess.run(
        command, cwd=store.workspace.root, env=clean_env(), capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert "refusing to load tampered-model version 1" in result.stderr
    assert "the registry recorded" in result.stderr


def test_registry_reuses_only_verified_cache(store: DemoStore, tmp_path: Path) -> None:
    name = "cache-model"
    register(store, name, store.onnx_a)
    registry = RegisteredModelSource(store.workspace.tracking_uri, name, tmp_path)
    first = registry.fetch(registry.version_for("champion"))
    first.path.write_bytes(b"corrupted cache")  # a damaged cache is re-downloaded, not trusted
    second = registry.fetch("1")
    assert second.path.read_bytes() != b"corrupted cache"
    assert second.sha256 == first.sha256
    tamper(store, name, "1")
    second.path.unlink()
    with pytest.raises(DigestMismatchError, match="refusing to load cache-model version 1"):
        registry.fetch("1")
