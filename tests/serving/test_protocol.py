"""KServe V2 / V1 protocol conformance against a real `mlops serve` process and a real registered model."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import numpy as np
import pandas as pd
import pytest
from prometheus_client.parser import text_string_to_metric_families

from mlops.data.sample_data import SAMPLE_SCHEMA
from mlops.model.onnx_model import OnnxScorer
from serving.errors import InvalidInput
from serving.protocol import to_matrix
from serving.tensors import FeatureBounds, RowEncoder
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


@pytest.fixture(scope="module")
def server(store: DemoStore) -> Iterator[ServerProcess]:
    with running_server(store, "--no-request-log", "--reload-interval-s", "0") as process:
        yield process


def named_rows(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as a JSON client sends them: feature name -> value, null for missing (feature columns only)."""
    features = frame[[*SAMPLE_SCHEMA.numeric_features, *SAMPLE_SCHEMA.categorical_features]]
    return [
        {str(k): (None if v != v else v) for k, v in row.items()}
        for row in features.to_dict(orient="records")
    ]


def infer_url(server: ServerProcess, version: str | None = None) -> str:
    pinned = f"/versions/{version}" if version else ""
    return f"{server.url}/v2/models/{MODEL}{pinned}/infer"


def test_health_and_server_metadata(server: ServerProcess) -> None:
    assert httpx.get(f"{server.url}/v2/health/live").json() == {"live": True}
    assert httpx.get(f"{server.url}/v2/health/ready").json() == {"ready": True}
    assert httpx.get(f"{server.url}/").status_code == 200
    meta = httpx.get(f"{server.url}/v2").json()
    assert meta["name"] == "mlops-serving" and meta["extensions"] == ["binary_tensor_data"]


def test_model_metadata_describes_the_registered_model(server: ServerProcess, store: DemoStore) -> None:
    spec = OnnxScorer.load(store.onnx_a / "model.onnx").spec
    for path in (f"/v2/models/{MODEL}", f"/v2/models/{MODEL}/versions/1"):
        meta = httpx.get(server.url + path).json()
        assert meta["name"] == MODEL
        assert meta["versions"] == ["1"]
        assert meta["platform"] == "onnxruntime_onnx"
        assert meta["inputs"] == [{"name": "features", "datatype": "FP32", "shape": [-1, spec.n_features]}]
        assert meta["outputs"] == [{"name": "probability", "datatype": "FP32", "shape": [-1]}]
        assert meta["parameters"]["feature_names"] == list(spec.names)
        assert meta["parameters"]["precision"] == "fp32"
        # What the probability is of: the label's positive value.
        assert (meta["parameters"]["label"], meta["parameters"]["positive_class"]) == ("default", "1")
        assert meta["parameters"]["negative_class"] == "0"
    for path in (f"/v2/models/{MODEL}/ready", f"/v2/models/{MODEL}/versions/1/ready"):
        assert httpx.get(server.url + path).json() == {"name": MODEL, "version": "1", "ready": True}
    assert httpx.get(f"{server.url}/v1/models").json() == {"models": [MODEL]}
    assert httpx.get(f"{server.url}/v1/models/{MODEL}").json() == {"name": MODEL, "ready": True}


def test_v2_infer_matches_onnx_runtime_including_missing_values(
    server: ServerProcess, store: DemoStore
) -> None:
    x = encoded(store, 40)
    assert np.isnan(x).any(), "holdout rows should include missing values sent as null"
    response = httpx.post(infer_url(server), json=v2_body(x, request_id="req-7"))
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["model_name"] == MODEL and body["model_version"] == "1" and body["id"] == "req-7"
    (output,) = body["outputs"]
    assert output["name"] == "probability" and output["datatype"] == "FP32" and output["shape"] == [40]
    np.testing.assert_allclose(output["data"], direct(store.onnx_a, x), rtol=1e-6, atol=1e-7)
    assert response.headers["x-model-version"] == "1"


def test_v2_accepts_nested_fp64_data_and_pinned_version(server: ServerProcess, store: DemoStore) -> None:
    x = np.nan_to_num(encoded(store, 3, offset=50), nan=1.0)
    body = {
        "inputs": [{"name": "features", "shape": [3, x.shape[1]], "datatype": "FP64", "data": x.tolist()}]
    }
    response = httpx.post(infer_url(server, version="1"), json=body)
    assert response.status_code == 200, response.text
    np.testing.assert_allclose(response.json()["outputs"][0]["data"], direct(store.onnx_a, x), rtol=1e-6)


def test_v2_zero_rows_returns_an_empty_tensor(server: ServerProcess, store: DemoStore) -> None:
    width = encoded(store, 1).shape[1]
    body = {"inputs": [{"name": "features", "shape": [0, width], "datatype": "FP32", "data": []}]}
    response = httpx.post(infer_url(server), json=body)
    assert response.status_code == 200, response.text
    assert response.json()["outputs"][0]["shape"] == [0]


def test_v1_predict_with_lists(server: ServerProcess, store: DemoStore) -> None:
    x = np.nan_to_num(encoded(store, 4, offset=100), nan=0.0)
    response = httpx.post(f"{server.url}/v1/models/{MODEL}:predict", json={"instances": x.tolist()})
    assert response.status_code == 200, response.text
    np.testing.assert_allclose(response.json()["predictions"], direct(store.onnx_a, x), rtol=1e-6)


def test_v1_predict_with_named_raw_rows(server: ServerProcess, store: DemoStore) -> None:
    frame = store.holdout.iloc[200:230].copy()
    frame.loc[frame.index[0], "region"] = "atlantis"  # unseen category: code 0, like FeatureSpec.encode
    rows = named_rows(frame)
    spec = OnnxScorer.load(store.onnx_a / "model.onnx").spec
    response = httpx.post(f"{server.url}/v1/models/{MODEL}:predict", json={"instances": rows})
    assert response.status_code == 200, response.text
    expected = direct(store.onnx_a, spec.encode(frame))
    np.testing.assert_allclose(response.json()["predictions"], expected, rtol=1e-6)


def test_metrics_are_labelled_by_model_and_version(server: ServerProcess, store: DemoStore) -> None:
    x = encoded(store, 2)
    for _ in range(3):
        assert httpx.post(infer_url(server), json=v2_body(x)).status_code == 200
    httpx.post(infer_url(server), content=b"{not json")
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(httpx.get(f"{server.url}/metrics").text)
        for s in family.samples
    }

    def value(name: str, **labels: str) -> float:
        return samples.get((name, tuple(sorted(labels.items()))), 0.0)

    ok = {"model": MODEL, "version": "1"}
    assert value("mlops_serving_requests_total", protocol="v2", code="200", **ok) >= 3
    assert value("mlops_serving_requests_total", protocol="v2", code="400", **ok) >= 1
    assert value("mlops_serving_request_latency_seconds_count", protocol="v2", **ok) >= 3
    assert value("mlops_serving_batch_size_rows_count", **ok) >= 3
    assert value("mlops_serving_batch_size_rows_sum", **ok) >= 6
    assert value("mlops_serving_errors_total", reason="bad_request", **ok) >= 1
    sha = [k for k in samples if k[0] == "mlops_serving_model_info"]
    assert len(sha) == 1 and samples[sha[0]] == 1.0 and ("precision", "fp32") in sha[0][1]


def test_row_encoder_matches_feature_spec_encode(store: DemoStore) -> None:
    spec = OnnxScorer.load(store.onnx_a / "model.onnx").spec
    frame = store.holdout.iloc[:200]
    rows = named_rows(frame)
    admitted = FeatureBounds(spec).admit(RowEncoder(spec).encode(rows), "instances")
    np.testing.assert_array_equal(admitted, spec.encode(frame))


def test_to_matrix_reads_null_as_missing_and_rejects_ragged_rows() -> None:
    matrix = to_matrix([[1, None], [3.5, 4]], 2, 2, "data")
    assert matrix.shape == (2, 2) and np.isnan(matrix[0, 1]) and matrix[1, 0] == 3.5
    with pytest.raises(InvalidInput, match="ragged"):
        to_matrix([[1, 2], [3]], 2, 2, "data")
