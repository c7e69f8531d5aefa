"""The Open Inference Protocol as an outside client speaks it: NVIDIA's tritonclient, HTTP and gRPC.

Default client settings throughout (binary tensor data on, which is what
``set_data_from_numpy`` and ``InferRequestedOutput`` do unless told otherwise),
against a real ``mlops serve`` with a bearer token, the gRPC port and the request log on.
This module must not import ``serving.proto`` (or ``serving.grpc_service``): tritonclient's
generated messages define the same ``inference.*`` protobuf symbols, and one process
cannot hold both.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pandas as pd
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from prometheus_client.parser import text_string_to_metric_families
from tritonclient.utils import InferenceServerException

from tests.support.serving import MODEL, DemoStore, ServerProcess, direct, encoded, running_server

pytestmark = pytest.mark.slow
TOKEN = "open-inference-token"
AUTH = {"authorization": f"Bearer {TOKEN}"}  # gRPC metadata keys are lowercase; HTTP does not care


class Headers(dict[str, str]):
    """A fresh copy per call: tritonclient's HTTP infer() writes Inference-Header-Content-Length into it."""

    def __init__(self) -> None:
        super().__init__(AUTH)


class Servers:
    def __init__(self, process: ServerProcess, logs: Path):
        self.process = process
        self.http = process.url.removeprefix("http://")
        self.grpc = process.grpc_address
        self.logs = logs


@pytest.fixture(scope="module")
def servers(store: DemoStore, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    logs = tmp_path_factory.mktemp("open-inference-logs")
    flags = (
        "--auth-token", TOKEN, "--reload-interval-s", "0",
        "--request-log-uri", str(logs), "--request-log-flush-s", "0.3",
    )  # fmt: skip
    with running_server(store, *flags, grpc=True) as process:
        yield Servers(process, logs)


@pytest.fixture(scope="module")
def http(servers: Servers) -> Iterator[Any]:
    client = httpclient.InferenceServerClient(servers.http)
    yield client
    client.close()


@pytest.fixture(scope="module")
def grpc(servers: Servers) -> Iterator[Any]:
    client = grpcclient.InferenceServerClient(servers.grpc)
    yield client
    client.close()


def infer(module: Any, client: Any, x: np.ndarray, datatype: str, request_id: str = "") -> Any:
    tensor = module.InferInput("features", list(x.shape), datatype)
    tensor.set_data_from_numpy(x.astype(np.float32 if datatype == "FP32" else np.float64))
    outputs = [module.InferRequestedOutput("probability")]
    return client.infer(MODEL, [tensor], outputs=outputs, request_id=request_id, headers=Headers())


@pytest.mark.parametrize("transport", ["http", "grpc"])
def test_health_readiness_and_metadata(transport: str, http: Any, grpc: Any, store: DemoStore) -> None:
    client = http if transport == "http" else grpc
    # Health and model readiness need no token (probes cannot send one).
    assert client.is_server_live() and client.is_server_ready()
    assert client.is_model_ready(MODEL) and client.is_model_ready(MODEL, "1")
    assert not client.is_model_ready("nope") and not client.is_model_ready(MODEL, "9")
    meta = client.get_server_metadata(headers=Headers())
    meta = meta if isinstance(meta, dict) else {"name": meta.name, "extensions": list(meta.extensions)}
    assert meta["name"] == "mlops-serving" and "binary_tensor_data" in meta["extensions"]
    model = client.get_model_metadata(MODEL, headers=Headers())
    if not isinstance(model, dict):
        model = {
            "versions": list(model.versions),
            "platform": model.platform,
            "inputs": [
                {"name": t.name, "datatype": t.datatype, "shape": list(t.shape)} for t in model.inputs
            ],
        }
    width = encoded(store, 1).shape[1]
    assert model["versions"] == ["1"] and model["platform"] == "onnxruntime_onnx"
    assert model["inputs"] == [{"name": "features", "datatype": "FP32", "shape": [-1, width]}]


@pytest.mark.parametrize("transport", ["http", "grpc"])
@pytest.mark.parametrize("datatype", ["FP32", "FP64"])
@pytest.mark.parametrize("rows", [1, 64])
def test_infer_binary_matches_onnx_runtime(
    transport: str, datatype: str, rows: int, http: Any, grpc: Any, store: DemoStore
) -> None:
    module, client = (httpclient, http) if transport == "http" else (grpcclient, grpc)
    x = encoded(store, rows, offset=7)  # holdout rows, missing values as NaN
    assert rows == 1 or np.isnan(x).any()
    result = infer(module, client, x, datatype, request_id=f"{transport}-{rows}")
    probability = result.as_numpy("probability")
    assert probability.dtype == np.float32 and probability.shape == (rows,)
    np.testing.assert_allclose(probability, direct(store.onnx_a, x), rtol=1e-6, atol=1e-7)
    response = result.get_response()
    response = (
        response
        if isinstance(response, dict)
        else {"id": response.id, "model_version": response.model_version}
    )
    assert response["id"] == f"{transport}-{rows}" and response["model_version"] == "1"


def column_inputs(module: Any, frame: pd.DataFrame, binary: bool = True) -> list[Any]:
    """One tritonclient InferInput per data column, as a client holding a DataFrame sends it: numbers as
    INT64/FP64 (NaN = missing), strings as BYTES (an object array), shape [N, 1]."""
    inputs = []
    for name in frame.columns:
        series = frame[name]
        if pd.api.types.is_numeric_dtype(series):
            values = series.to_numpy()[:, None]
            datatype = "INT64" if values.dtype.kind == "i" else "FP64"
        else:
            values = series.to_numpy(dtype=object)[:, None]
            datatype = "BYTES"
        tensor = module.InferInput(name, list(values.shape), datatype)
        if module is httpclient:
            tensor.set_data_from_numpy(values, binary_data=binary)
        else:
            tensor.set_data_from_numpy(values)
        inputs.append(tensor)
    return inputs


@pytest.mark.parametrize("transport", ["http-binary", "http-json", "grpc"])
def test_a_data_row_sent_per_column_scores_like_the_packed_form(
    transport: str, http: Any, grpc: Any, store: DemoStore
) -> None:
    """Rows of the credit sample, string categoricals and label and protected column included."""
    from mlops.data.sample_data import SAMPLE_SCHEMA

    frame = store.holdout.dropna(subset=list(SAMPLE_SCHEMA.categorical_features)).iloc[:16]
    if transport == "http-json":  # JSON has no NaN: rows without missing numbers
        frame = store.holdout.dropna().iloc[:16]
    assert not pd.api.types.is_numeric_dtype(frame["region"]) and "sex" in frame and "default" in frame
    module, client = (grpcclient, grpc) if transport == "grpc" else (httpclient, http)
    inputs = column_inputs(module, frame, binary=transport != "http-json")
    per_column = client.infer(MODEL, inputs, headers=Headers()).as_numpy("probability")
    from mlops.model.onnx_model import OnnxScorer

    x = OnnxScorer.load(store.onnx_a / "model.onnx").spec.encode(frame)
    packed = infer(module, client, x, "FP32").as_numpy("probability")
    np.testing.assert_array_equal(per_column, packed)
    np.testing.assert_allclose(per_column, direct(store.onnx_a, x), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("transport", ["http", "grpc"])
def test_an_unknown_column_is_refused_by_name(transport: str, http: Any, grpc: Any, store: DemoStore) -> None:
    frame = store.holdout.dropna().iloc[:2].assign(favourite_colour="red")
    module, client = (grpcclient, grpc) if transport == "grpc" else (httpclient, http)
    with pytest.raises(InferenceServerException, match=r"unknown input column\(s\) \['favourite_colour'\]"):
        client.infer(MODEL, column_inputs(module, frame), headers=Headers())


def test_http_json_output_when_binary_is_off(http: Any, store: DemoStore) -> None:
    x = encoded(store, 3, offset=90)
    tensor = httpclient.InferInput("features", list(x.shape), "FP32")
    tensor.set_data_from_numpy(x, binary_data=False)
    assert np.isnan(x).any()  # the client writes NaN, which JSON does not have
    with pytest.raises(InferenceServerException, match="NaN and Infinity are not JSON: send null"):
        http.infer(MODEL, [tensor], headers=Headers())
    x = np.nan_to_num(x, nan=0.0)
    tensor.set_data_from_numpy(x, binary_data=False)
    result = http.infer(
        MODEL,
        [tensor],
        outputs=[httpclient.InferRequestedOutput("probability", binary_data=False)],
        headers=Headers(),
    )
    assert "data" in result.get_response()["outputs"][0]
    np.testing.assert_allclose(result.as_numpy("probability"), direct(store.onnx_a, x), rtol=1e-6)


def test_http_binary_output_without_requested_outputs(http: Any, store: DemoStore) -> None:
    """No ``outputs`` at all: tritonclient then asks for binary_data_output on the whole request."""
    x = encoded(store, 5, offset=120)
    tensor = httpclient.InferInput("features", list(x.shape), "FP32")
    tensor.set_data_from_numpy(x)
    result = http.infer(MODEL, [tensor], headers=Headers())
    assert result.get_response()["outputs"][0]["parameters"]["binary_data_size"] == 20
    np.testing.assert_allclose(result.as_numpy("probability"), direct(store.onnx_a, x), rtol=1e-6)


def test_grpc_typed_contents_get_typed_output(servers: Servers, store: DemoStore) -> None:
    """A client building ModelInferRequest by hand with fp32_contents (no raw bytes) gets contents back."""
    import grpc as grpc_lib
    from tritonclient.grpc import service_pb2, service_pb2_grpc

    x = np.nan_to_num(encoded(store, 4, offset=30), nan=0.0)
    request = service_pb2.ModelInferRequest(model_name=MODEL, id="typed")
    tensor = request.inputs.add(name="features", datatype="FP32", shape=list(x.shape))
    tensor.contents.fp32_contents.extend(x.ravel().tolist())
    with grpc_lib.insecure_channel(servers.grpc) as channel:
        stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
        response = stub.ModelInfer(request, metadata=(("authorization", f"Bearer {TOKEN}"),))
    assert response.id == "typed" and not response.raw_output_contents
    np.testing.assert_allclose(response.outputs[0].contents.fp32_contents, direct(store.onnx_a, x), rtol=1e-6)


@pytest.mark.parametrize(
    ("headers", "code"),
    [({}, "UNAUTHENTICATED"), ({"authorization": "Bearer wrong"}, "UNAUTHENTICATED")],
)
def test_grpc_needs_the_bearer_token(grpc: Any, store: DemoStore, headers: dict[str, str], code: str) -> None:
    tensor = grpcclient.InferInput("features", [1, 20], "FP32")
    tensor.set_data_from_numpy(encoded(store, 1))
    with pytest.raises(InferenceServerException, match="bearer token") as info:
        grpc.infer(MODEL, [tensor], headers=headers)
    assert code in str(info.value.status())
    with pytest.raises(InferenceServerException, match="bearer token"):
        grpc.get_model_metadata(MODEL, headers=headers)


def bad_value_row(store: DemoStore, column: int, value: float) -> np.ndarray:
    x = np.nan_to_num(encoded(store, 2, offset=3), nan=0.0).astype(np.float64)
    x[1, column] = value
    return x


@pytest.mark.parametrize("transport", ["http", "grpc"])
@pytest.mark.parametrize(
    ("column", "value", "datatype", "message"),
    [
        (1, 1e300, "FP64", "row 1, feature 'income' (column 1) is 1e+300, which is not a finite FP32"),
        (2, np.inf, "FP32", "row 1, feature 'loan_amount' (column 2) is inf"),
        (19, -7, "FP32", "row 1, feature 'region' (column 19) is -7, which is not a code"),
        (14, 99, "FP64", "row 1, feature 'employment_type' (column 14) is 99, which is not a code"),
        (15, 3.5, "FP32", "row 1, feature 'home_ownership' (column 15) is 3.5, which is not a code"),
    ],
)
def test_bad_values_are_refused_with_the_value_named(
    transport: str,
    http: Any,
    grpc: Any,
    store: DemoStore,
    column: int,
    value: float,
    datatype: str,
    message: str,
) -> None:
    module, client = (httpclient, http) if transport == "http" else (grpcclient, grpc)
    with pytest.raises(InferenceServerException, match=re.escape(message)) as info:
        infer(module, client, bad_value_row(store, column, value), datatype)
    assert ("400" if transport == "http" else "INVALID_ARGUMENT") in str(info.value.status())


@pytest.mark.parametrize(
    ("rows", "shape", "message"),
    [(2, [2, 19], "has shape [2, 19]"), (2, [3, 20], "needs 240")],
)
def test_grpc_shape_errors(grpc: Any, store: DemoStore, rows: int, shape: list[int], message: str) -> None:
    tensor = grpcclient.InferInput("features", [rows, 20], "FP32")
    tensor.set_data_from_numpy(encoded(store, rows))  # then the declared shape disagrees with the bytes
    tensor._input.ClearField("shape")
    tensor._input.shape.extend(shape)
    with pytest.raises(InferenceServerException, match=re.escape(message)):
        grpc.infer(MODEL, [tensor], headers=Headers())


def test_grpc_unknown_model_is_not_found(grpc: Any, store: DemoStore) -> None:
    tensor = grpcclient.InferInput("features", [1, 20], "FP32")
    tensor.set_data_from_numpy(encoded(store, 1))
    with pytest.raises(InferenceServerException, match="model 'nope' is not served here") as info:
        grpc.infer("nope", [tensor], headers=Headers())
    assert "NOT_FOUND" in str(info.value.status())


PARITY = [
    pytest.param("features", "FP32", 20, "probability", None, None, id="good"),
    pytest.param(
        "x", "FP32", 20, "probability", None, "missing input 'features' (got ['x'])", id="input-name"
    ),
    pytest.param("features", "INT64", 20, "probability", None, "has datatype 'INT64'", id="datatype"),
    pytest.param("features", "FP32", 19, "probability", None, "has shape [3, 19]", id="width"),
    pytest.param("features", "FP32", 20, "logit", None, "requested output 'logit'", id="output"),
    pytest.param("features", "FP64", 20, "probability", (2, 1e300), "(column 2) is 1e+300", id="beyond-fp32"),
    pytest.param(
        "features", "FP32", 20, "probability", (19, 5), "(column 19) is 5, which is not a code", id="code"
    ),
]


@pytest.mark.parametrize(("name", "datatype", "columns", "output", "bad", "refusal"), PARITY)
def test_rest_and_grpc_answer_the_same_request_alike(
    http: Any,
    grpc: Any,
    store: DemoStore,
    name: str,
    datatype: str,
    columns: int,
    output: str,
    bad: tuple[int, float] | None,
    refusal: str | None,
) -> None:
    """Two faces of one data plane: the same scores, or the same refusal word for word."""
    x = np.nan_to_num(encoded(store, 3, offset=150), nan=0.0).astype(np.float64)
    if bad is not None:
        x[2, bad[0]] = bad[1]
    x = x[:, :columns].astype({"FP32": np.float32, "FP64": np.float64, "INT64": np.int64}[datatype])
    answers: list[tuple[str, Any]] = []
    for module, client in ((httpclient, http), (grpcclient, grpc)):
        tensor = module.InferInput(name, list(x.shape), datatype)
        tensor.set_data_from_numpy(x)
        outputs = [module.InferRequestedOutput(output)]
        try:
            result = client.infer(MODEL, [tensor], outputs=outputs, headers=Headers())
        except InferenceServerException as exc:
            answers.append(("refused", exc.message()))
        else:
            answers.append(("scored", result.as_numpy("probability").tolist()))
    rest, over_grpc = answers
    assert rest == over_grpc
    if refusal is None:
        assert rest[0] == "scored"
        np.testing.assert_allclose(rest[1], direct(store.onnx_a, x), rtol=1e-6)
    else:
        assert rest[0] == "refused" and refusal in rest[1], rest


def test_grpc_and_binary_requests_share_metrics_and_the_request_log(
    servers: Servers, http: Any, grpc: Any, store: DemoStore
) -> None:
    x = encoded(store, 64, offset=200)
    infer(grpcclient, grpc, x, "FP32")
    infer(httpclient, http, x, "FP64")
    with pytest.raises(InferenceServerException, match="is inf"):
        infer(grpcclient, grpc, bad_value_row(store, 0, np.inf), "FP32")
    expected = direct(store.onnx_a, x)
    deadline = time.monotonic() + 20
    while True:  # earlier tests logged rows too: wait for these 128
        files = sorted((servers.logs / MODEL).glob("*.parquet"))
        logged = pd.concat([pd.read_parquet(f) for f in files]) if files else pd.DataFrame({"prediction": []})
        predictions = logged["prediction"].to_numpy(float)
        hits = np.isclose(predictions[:, None], expected[None, :], rtol=1e-6).any(axis=0).sum()
        if hits == 64 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert hits == 64, f"only {hits} of the 64 distinct rows sent were logged"
    assert np.isfinite(predictions).all()
    metrics = httpx.get(f"{servers.process.url}/metrics", headers=Headers()).text
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(metrics)
        for s in family.samples
    }

    def count(code: str) -> float:
        labels = {"code": code, "model": MODEL, "version": "1", "protocol": "grpc"}
        return samples.get(("mlops_serving_requests_total", tuple(sorted(labels.items()))), 0.0)

    assert count("200") >= 1 and count("400") >= 1
