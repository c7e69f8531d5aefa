"""Dynamic batching: concurrent callers share ONNX Runtime calls and each gets exactly its own rows back."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from prometheus_client.parser import text_string_to_metric_families

from mlops.origin_facts import file_sha256
from serving.batching import Batcher, VersionGone
from serving.model_source import ModelArtifact
from serving.reload import ModelHolder
from serving.runtime import LoadedModel, load_model
from tests.support.serving import (
    MODEL,
    DemoStore,
    ServerProcess,
    direct,
    encoded,
    running_server,
    v2_body,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", params=["inline", "thread"])
def server(store: DemoStore, request: pytest.FixtureRequest) -> Iterator[ServerProcess]:
    flags = [
        "--max-batch-size",
        "32",
        "--max-queue-delay-ms",
        "5",
        "--no-request-log",
        "--reload-interval-s",
        "0",
    ]
    if request.param == "thread":
        flags.append("--inference-in-thread")
    with running_server(store, *flags) as process:
        yield process


def local_model(onnx_dir: Path, version: str) -> LoadedModel:
    path = onnx_dir / "model.onnx"
    return load_model(ModelArtifact(MODEL, version, path, file_sha256(path), {}))


def test_concurrent_requests_each_get_their_own_rows(server: ServerProcess, store: DemoStore) -> None:
    x = encoded(store, 400)
    expected = direct(store.onnx_a, x)
    # 200 requests of 1-3 distinct rows each, all in flight together.
    spans = []
    start = 0
    for i in range(200):
        size = 1 + i % 3
        if start + size > len(x):
            break
        spans.append((start, start + size))
        start += size

    async def run() -> list[tuple[tuple[int, int], httpx.Response]]:
        limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
        async with httpx.AsyncClient(base_url=server.url, limits=limits, timeout=30) as client:

            async def call(span: tuple[int, int]) -> tuple[tuple[int, int], httpx.Response]:
                a, b = span
                return span, await client.post(f"/v2/models/{MODEL}/infer", json=v2_body(x[a:b], f"r{a}"))

            return await asyncio.gather(*(call(span) for span in spans))

    for (a, b), response in asyncio.run(run()):
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["id"] == f"r{a}"
        assert body["outputs"][0]["shape"] == [b - a]
        np.testing.assert_allclose(body["outputs"][0]["data"], expected[a:b], rtol=1e-5, atol=1e-6)

    samples = {
        s.name: s.value
        for family in text_string_to_metric_families(httpx.get(f"{server.url}/metrics").text)
        for s in family.samples
        if s.name.startswith("mlops_serving_batch_size_rows_")
    }
    # Every row was scored exactly once, in fewer model calls than requests: batches were coalesced.
    assert samples["mlops_serving_batch_size_rows_sum"] >= start
    assert samples["mlops_serving_batch_size_rows_count"] < len(spans)


def test_request_larger_than_max_batch_runs_alone(store: DemoStore) -> None:
    model = local_model(store.onnx_a, "1")
    x = encoded(store, 50)
    sizes: list[int] = []

    async def run() -> list[np.ndarray]:
        batcher = Batcher(ModelHolder(model), 8, 0.0, False, on_batch=lambda m, rows: sizes.append(rows))
        batcher.start()
        try:
            results = await asyncio.gather(
                batcher.submit(x[:20]), batcher.submit(x[20:23]), batcher.submit(x[23:])
            )
        finally:
            await batcher.stop()
        return [y for y, _ in results]

    big, small, rest = asyncio.run(run())
    np.testing.assert_allclose(np.concatenate([big, small, rest]), direct(store.onnx_a, x), rtol=1e-6)
    assert 20 in sizes and max(sizes) <= 27 and sum(sizes) == 50


def test_a_failing_item_does_not_fail_its_batch_mates(store: DemoStore) -> None:
    model = local_model(store.onnx_a, "1")
    good = encoded(store, 3)

    async def run() -> list[Any]:
        batcher = Batcher(ModelHolder(model), 64, 0.002, False)
        batcher.start()
        try:
            wrong_width = np.zeros((2, good.shape[1] + 1), dtype=np.float32)
            return await asyncio.gather(
                batcher.submit(good[:1]),
                batcher.submit(wrong_width),
                batcher.submit(good[1:]),
                return_exceptions=True,
            )
        finally:
            await batcher.stop()

    first, failed, rest = asyncio.run(run())
    assert isinstance(failed, Exception)
    assert not isinstance(first, BaseException) and not isinstance(rest, BaseException)
    np.testing.assert_allclose(np.concatenate([first[0], rest[0]]), direct(store.onnx_a, good), rtol=1e-6)


def test_pinned_version_replaced_while_queued_is_refused(store: DemoStore) -> None:
    old, new = local_model(store.onnx_a, "1"), local_model(store.onnx_b, "2")
    x = encoded(store, 2)

    async def run() -> tuple[list[Any], tuple[np.ndarray, LoadedModel]]:
        holder = ModelHolder(old)
        batcher = Batcher(holder, 64, 0.05, False)  # the queue delay leaves time to swap
        batcher.start()
        try:
            pinned = asyncio.ensure_future(batcher.submit(x, version="1"))
            following = asyncio.ensure_future(batcher.submit(x))
            await asyncio.sleep(0.01)
            holder.swap(new)
            outcomes: list[Any] = await asyncio.gather(pinned, return_exceptions=True)
            return outcomes, await following
        finally:
            await batcher.stop()

    (refused,), (y, used) = asyncio.run(run())
    assert isinstance(refused, VersionGone) and "replaced by 2" in str(refused)
    assert used.version == "2"
    np.testing.assert_allclose(y, direct(store.onnx_b, x), rtol=1e-6)
