"""Request/response logging: sampled rows land in Parquet shaped like the training data (drift monitor input)."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path

import httpx
import numpy as np
import pandas as pd
import pytest

from mlops.data.sample_data import SAMPLE_SCHEMA
from mlops.model.onnx_model import OnnxScorer
from mlops.origin_facts import file_sha256
from serving.model_source import ModelArtifact
from serving.request_log import RequestLogger
from serving.request_log_blocks import Block
from serving.request_log_table import to_table
from serving.runtime import load_model
from tests.support.serving import MODEL, DemoStore, direct, running_server, stop

pytestmark = pytest.mark.slow


def named_rows(frame: pd.DataFrame) -> list[dict[str, object]]:
    features = frame[[*SAMPLE_SCHEMA.numeric_features, *SAMPLE_SCHEMA.categorical_features]]
    return [
        {str(k): (None if v != v else v) for k, v in row.items()}
        for row in features.to_dict(orient="records")
    ]


def read_logs(directory: Path) -> pd.DataFrame:
    files = sorted(directory.glob("*.parquet"))
    return pd.concat([pd.read_parquet(f) for f in files], ignore_index=True) if files else pd.DataFrame()


def test_logged_rows_match_requests_and_predictions(store: DemoStore, tmp_path: Path) -> None:
    spec = OnnxScorer.load(store.onnx_a / "model.onnx").spec
    frame = store.holdout.iloc[:40].reset_index(drop=True)
    logs = tmp_path / "logs"
    flags = ("--request-log-uri", str(logs), "--request-log-flush-s", "0.3", "--reload-interval-s", "0")
    started = pd.Timestamp.now(tz="UTC")
    with running_server(store, *flags) as server:
        answered_ids = []
        for i in range(0, 40, 2):
            rows = named_rows(frame.iloc[i : i + 2])
            headers = {"x-request-id": "client-0"} if i == 0 else {}
            response = httpx.post(
                f"{server.url}/v1/models/{MODEL}:predict", json={"instances": rows}, headers=headers
            )
            assert response.status_code == 200, response.text
            answered_ids.append(response.headers["x-request-id"])
        deadline = time.monotonic() + 20
        while len(read_logs(logs / MODEL)) < 40:
            assert time.monotonic() < deadline, f"only {len(read_logs(logs / MODEL))} rows logged"
            time.sleep(0.2)
        assert not list((logs / MODEL).glob("*.tmp")), "half-written files must not be visible"

    logged = read_logs(logs / MODEL).sort_values("timestamp", kind="stable").reset_index(drop=True)
    assert list(logged.columns) == [
        *spec.names,
        "prediction",
        "model_version",
        "timestamp",
        "request_id",
        "request_row",
    ]
    assert (logged["model_version"] == "1").all()
    assert logged["timestamp"].min() >= started and logged["timestamp"].max() <= pd.Timestamp.now(tz="UTC")
    # Each row carries its request's id (the client's, else the one the response returned) and its index in it.
    assert answered_ids[0] == "client-0" and len(set(answered_ids)) == 20
    assert sorted(set(logged["request_id"])) == sorted(answered_ids)
    assert all(sorted(rows) == [0, 1] for rows in logged.groupby("request_id")["request_row"].apply(list))
    # Categoricals come back as the strings clients sent; missing values as nulls.
    pd.testing.assert_frame_equal(
        logged[list(spec.categorical)], frame[list(spec.categorical)].astype(object), check_dtype=False
    )
    np.testing.assert_allclose(
        logged[list(spec.numeric)].to_numpy(float), frame[list(spec.numeric)].to_numpy(float)
    )
    np.testing.assert_allclose(logged["prediction"], direct(store.onnx_a, spec.encode(frame)), rtol=1e-6)


def test_buffer_is_flushed_on_shutdown(store: DemoStore, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    flags = ("--request-log-uri", str(logs), "--request-log-flush-s", "3600", "--reload-interval-s", "0")
    with running_server(store, *flags) as server:
        for i in range(5):
            rows = named_rows(store.holdout.iloc[i : i + 1])
            assert (
                httpx.post(f"{server.url}/v1/models/{MODEL}:predict", json={"instances": rows}).status_code
                == 200
            )
        assert read_logs(logs / MODEL).empty, "nothing should be written before the flush interval"
        # uvicorn shuts down gracefully, then re-raises SIGTERM (the conventional exit status 143).
        assert stop(server.process) in (0, -signal.SIGTERM)
    assert len(read_logs(logs / MODEL)) == 5


def test_sampling_rate_keeps_about_that_fraction(store: DemoStore) -> None:
    path = store.onnx_a / "model.onnx"
    model = load_model(ModelArtifact(MODEL, "1", path, file_sha256(path), {}))
    x = np.zeros((1, model.n_features), dtype=np.float32)

    async def run() -> int:
        logger = RequestLogger("unused", MODEL, 0.25, 3600, 1_000_000)
        return sum(logger.record(model, x, np.zeros(1, dtype=np.float32)) for _ in range(4000))

    kept = asyncio.run(run())
    assert 800 < kept < 1200  # binomial(4000, 0.25): mean 1000, sd 27


def test_codes_outside_the_vocabulary_are_logged_as_null(store: DemoStore) -> None:
    path = store.onnx_a / "model.onnx"
    model = load_model(ModelArtifact(MODEL, "1", path, file_sha256(path), {}))
    spec = model.spec
    x = np.zeros((3, spec.n_features), dtype=np.float32)
    first_cat = len(spec.numeric)
    x[:, first_cat] = [1, 0, len(spec.vocabularies[0]) + 5]
    x[1, 0] = np.nan

    async def run() -> list[Block]:
        logger = RequestLogger("unused", MODEL, 1.0, 3600, 1_000_000)
        logger.record(model, x, np.array([0.1, 0.2, 0.3], dtype=np.float32))
        return logger.take()

    (block,) = asyncio.run(run())
    table = to_table(block)
    assert table.num_rows == 3
    assert table.column(spec.categorical[0]).to_pylist() == [spec.vocabularies[0][0], None, None]
    assert table.column(spec.numeric[0]).to_pylist() == [0.0, None, 0.0]
    assert table.column("prediction").to_pylist() == pytest.approx([0.1, 0.2, 0.3])


def test_a_model_swap_starts_a_new_block_and_big_requests_fit(store: DemoStore) -> None:
    path_a, path_b = store.onnx_a / "model.onnx", store.onnx_b / "model.onnx"
    v1 = load_model(ModelArtifact(MODEL, "1", path_a, file_sha256(path_a), {}))
    v2 = load_model(ModelArtifact(MODEL, "2", path_b, file_sha256(path_b), {}))
    x = np.zeros((5000, v1.n_features), dtype=np.float32)

    async def run() -> list[Block]:
        logger = RequestLogger("unused", MODEL, 1.0, 3600, 1_000_000)
        logger.record(v1, x[:2], np.zeros(2, dtype=np.float32))
        logger.record(v2, x[:3], np.zeros(3, dtype=np.float32))
        logger.record(v2, x, np.zeros(5000, dtype=np.float32))  # larger than a block
        return logger.take()

    blocks = asyncio.run(run())
    assert [(b.version, b.rows) for b in blocks] == [("1", 2), ("2", 3), ("2", 5000)]
