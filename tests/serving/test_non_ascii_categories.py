"""Categories that are not ASCII (``Zürich``, ``東京``, an emoji) score as the category the model learned.

Every other serving test's categories are ASCII, where UTF-8 and latin-1 agree byte for byte; a
server that decoded a BYTES element as anything but UTF-8 would turn ``Zürich`` into an unseen
category (code 0) and answer a confident, wrong score with status 200. Here a model is trained on
the credit sample with its regions renamed to 2-, 3- and 4-byte UTF-8 names, and the same rows go
through each door that carries strings: REST V2 JSON per column, V2 binary tensors per column
(4-byte length + UTF-8), V1 rows, and gRPC (raw contents, as tritonclient sends them, and typed
``bytes_contents``). Each answer must equal ONNX Runtime on the training-time encoding
(:meth:`FeatureSpec.encode`), and that must differ from the rows with the region unknown, so the
comparison can fail. Bytes that are not UTF-8 are refused by element, never guessed.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import tritonclient.grpc as grpcclient
from starlette.testclient import TestClient
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc import service_pb2_grpc as pb_grpc

from components.register.version_registration import register_onnx_model
from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
from mlops.vocabulary import CHAMPION, Lineage
from serving.app import create_app
from serving.columns import bytes_elements
from serving.config import ServerConfig
from serving.errors import InvalidInput
from serving.runtime import LoadedModel
from tests.serving.test_columns import INFER, PREDICT, pandas_codec_request
from tests.serving.test_model_router import local_model
from tests.serving.test_open_inference import column_inputs
from tests.support.serving import DemoStore, direct, running_server, train_onnx

pytestmark = pytest.mark.slow
NAME = "credit-default-utf8"
REGIONS = {"north": "Zürich", "south": "São Paulo", "east": "東京", "west": "Reykjavík 🌋"}
"""2-byte (ü, ã, í), 3-byte (CJK) and 4-byte (emoji) UTF-8 names."""
TOKEN = "utf8-token"
AUTH = {"authorization": f"Bearer {TOKEN}"}
JSON = {"content-type": "application/json"}
CONFIG = ServerConfig(tracking_uri="sqlite:///unused.db", request_log_uri="", reload_interval_s=0)


def renamed(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.assign(region=frame["region"].map(REGIONS))


@dataclass(frozen=True)
class Utf8Model:
    onnx_dir: Path
    rows: pd.DataFrame
    """Holdout rows with every region set, label and protected column included (as they stand in the data)."""

    @property
    def spec(self) -> Any:
        from mlops.model.onnx_model import OnnxScorer

        return OnnxScorer.load(self.onnx_dir / "model.onnx").spec

    def reference(self, frame: pd.DataFrame) -> np.ndarray:
        """ONNX Runtime on the training-time encoding of ``frame``."""
        return direct(self.onnx_dir, self.spec.encode(frame))


@pytest.fixture(scope="module")
def utf8(store: DemoStore, tmp_path_factory: pytest.TempPathFactory) -> Utf8Model:
    """Trained and registered (alias champion) in the shared store, under a name of its own."""
    base = tmp_path_factory.mktemp("utf8")
    onnx_dir = train_onnx(base / "onnx", renamed(generate(SampleDataConfig(rows=1500, seed=11))), seed=0)
    holdout = renamed(store.holdout)
    lineage = Lineage("serving-tests", "", "digest", "1", "0.1.0", "run")
    registered = register_onnx_model(onnx_dir, holdout, NAME, lineage, store.tracking)
    store.tracking.point_alias(NAME, CHAMPION, registered.version)
    rows = holdout.dropna(subset=list(SAMPLE_SCHEMA.categorical_features)).iloc[:24]
    rows = rows[[SAMPLE_SCHEMA.label, *SAMPLE_SCHEMA.features, "sex"]]
    assert set(rows["region"]) == set(REGIONS.values()), "every non-ASCII region is sent"
    return Utf8Model(onnx_dir, rows)


@pytest.fixture(scope="module")
def client(utf8: Utf8Model) -> Iterator[TestClient]:
    model: LoadedModel = local_model(utf8.onnx_dir, "1")
    with TestClient(create_app(CONFIG, model)) as c:
        yield c


def test_training_encodes_the_names_and_the_onnx_file_carries_them(utf8: Utf8Model) -> None:
    spec = utf8.spec  # read back from the ONNX file's metadata, as the server reads it
    index = spec.categorical.index("region")
    assert sorted(spec.vocabularies[index]) == sorted(REGIONS.values())
    codes = spec.encode(utf8.rows)[:, len(spec.numeric) + index]
    assert (codes > 0).all(), "every renamed region is a known category (code 0 is unseen)"
    mangled = utf8.rows.assign(region=[r.encode().decode("latin-1") for r in utf8.rows["region"]])
    assert (spec.encode(mangled)[:, len(spec.numeric) + index] == 0).all(), "mojibake is an unseen category"
    unknown = utf8.reference(utf8.rows.assign(region="atlantis"))
    assert np.abs(utf8.reference(utf8.rows) - unknown).max() > 1e-4, "the region moves the score"


def test_bytes_elements_decode_utf8() -> None:
    values = list(REGIONS.values())
    raw = b"".join(struct.pack("<I", len(v.encode())) + v.encode() for v in values)
    assert bytes_elements(raw, len(values), "input 'region'") == values
    with pytest.raises(InvalidInput, match=r"input 'region' \(BYTES\) element 1 is not UTF-8"):
        latin = "Zürich".encode("latin-1")
        bytes_elements(
            struct.pack("<I", 1) + b"a" + struct.pack("<I", len(latin)) + latin, 2, "input 'region'"
        )


def test_rest_v2_json_per_column(utf8: Utf8Model, client: TestClient) -> None:
    body = pandas_codec_request(utf8.rows)
    sent = next(c for c in body["inputs"] if c["name"] == "region")
    assert sent["datatype"] == "BYTES" and "Zürich" in json.dumps(body, ensure_ascii=False)
    response = client.post(INFER, content=json.dumps(body, ensure_ascii=False).encode(), headers=JSON)
    assert response.status_code == 200, response.text
    np.testing.assert_allclose(response.json()["outputs"][0]["data"], utf8.reference(utf8.rows), rtol=1e-6)
    escaped = client.post(INFER, json=body)  # \u00fc escapes: the same strings
    assert escaped.json()["outputs"][0]["data"] == response.json()["outputs"][0]["data"]


def test_rest_v1_rows(utf8: Utf8Model, client: TestClient) -> None:
    rows = json.loads(utf8.rows.to_json(orient="records", force_ascii=False))
    response = client.post(
        PREDICT, content=json.dumps({"instances": rows}, ensure_ascii=False).encode(), headers=JSON
    )
    assert response.status_code == 200, response.text
    np.testing.assert_allclose(response.json()["predictions"], utf8.reference(utf8.rows), rtol=1e-6)


def binary_body(frame: pd.DataFrame, encoding: str = "utf-8") -> tuple[bytes, dict[str, str]]:
    """Per-column binary tensors as tritonclient's HTTP client sends them (BYTES: 4-byte length + the
    string's bytes, which tritonclient encodes as UTF-8); ``encoding``: a client that does not."""
    inputs, chunks = [], []
    for name in frame.columns:
        series = frame[name]
        if pd.api.types.is_numeric_dtype(series):
            raw, datatype = series.to_numpy(dtype="<f8").tobytes(), "FP64"
        else:
            raw = b"".join(struct.pack("<I", len(v.encode(encoding))) + v.encode(encoding) for v in series)
            datatype = "BYTES"
        chunks.append(raw)
        inputs.append({"name": name, "shape": [len(series), 1], "datatype": datatype,
                       "parameters": {"binary_data_size": len(raw)}})  # fmt: skip
    header = json.dumps({"inputs": inputs}).encode()
    return header + b"".join(chunks), {"Inference-Header-Content-Length": str(len(header))}


def test_rest_v2_binary_tensors_per_column(utf8: Utf8Model, client: TestClient) -> None:
    body, headers = binary_body(utf8.rows)
    assert "Zürich".encode() in body and "東京".encode() in body
    response = client.post(INFER, content=body, headers=headers)
    assert response.status_code == 200, response.text
    np.testing.assert_allclose(response.json()["outputs"][0]["data"], utf8.reference(utf8.rows), rtol=1e-6)


def test_a_binary_element_that_is_not_utf8_is_refused_by_element(utf8: Utf8Model, client: TestClient) -> None:
    """``Zürich`` in latin-1 (ü as the one byte 0xFC) is not UTF-8: a 400 naming the element, not a guess."""
    frame = utf8.rows[utf8.rows["region"] == "Zürich"].iloc[:3]
    body, headers = binary_body(frame, encoding="latin-1")
    assert "Zürich".encode("latin-1") in body
    response = client.post(INFER, content=body, headers=headers)
    assert response.status_code == 400, response.text
    assert "input 'region' (BYTES) element 0 is not UTF-8" in response.json()["error"]


# --- gRPC: a real `mlops serve` process --------------------------------------------------------------


@pytest.fixture(scope="module")
def grpc_address(store: DemoStore, utf8: Utf8Model) -> Iterator[str]:
    flags = ("--model-name", NAME, "--auth-token", TOKEN, "--reload-interval-s", "0", "--no-request-log")
    with running_server(store, *flags, grpc=True) as server:
        yield server.grpc_address


def test_grpc_raw_contents_as_tritonclient_sends_them(utf8: Utf8Model, grpc_address: str) -> None:
    client = grpcclient.InferenceServerClient(grpc_address)
    try:
        answer = client.infer(NAME, column_inputs(grpcclient, utf8.rows), headers=dict(AUTH))
    finally:
        client.close()
    np.testing.assert_allclose(
        answer.as_numpy("probability"), utf8.reference(utf8.rows), rtol=1e-6, atol=1e-7
    )


def test_grpc_typed_bytes_contents(utf8: Utf8Model, grpc_address: str) -> None:
    import grpc

    frame = utf8.rows
    request = pb.ModelInferRequest(model_name=NAME)
    for name in frame.columns:
        series = frame[name]
        tensor = request.inputs.add(name=name, shape=[len(series)])
        if pd.api.types.is_numeric_dtype(series):
            tensor.datatype = "FP64"
            tensor.contents.fp64_contents.extend(series.astype(float).tolist())
        else:
            tensor.datatype = "BYTES"
            tensor.contents.bytes_contents.extend(v.encode() for v in series)
    with grpc.insecure_channel(grpc_address) as channel:
        stub = pb_grpc.GRPCInferenceServiceStub(channel)
        answer = stub.ModelInfer(request, metadata=tuple(AUTH.items()))
        got = answer.outputs[0].contents.fp32_contents  # typed in, typed out
        np.testing.assert_allclose(got, utf8.reference(frame), rtol=1e-6, atol=1e-7)
        latin = pb.ModelInferRequest()
        latin.CopyFrom(request)
        region = next(t for t in latin.inputs if t.name == "region")
        region.contents.bytes_contents[0] = "Zürich".encode("latin-1")
        with pytest.raises(grpc.RpcError) as refused:
            stub.ModelInfer(latin, metadata=tuple(AUTH.items()))
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "input 'region' (BYTES) element 0 is not UTF-8" in str(refused.value.details())
