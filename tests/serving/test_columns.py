"""Rows served as they are: per-column V2 inputs and V1 rows straight from the data.

In process (Starlette's test client over the real app, lifespan included) on the demo
model trained on the credit-default-like sample (14 numeric and 6 string categorical
features, label ``default``, protected attribute ``sex``). Every answer is compared with
ONNX Runtime scoring the training-time encoding (:meth:`FeatureSpec.encode`) directly.
The request shape of MLServer's pandas codec is written here as its source
(``mlserver/codecs/pandas.py``, 1.x) builds it: request ``parameters.content_type: "pd"``,
one input per DataFrame column with shape ``[N, 1]``, ``INT64``/``FP64`` for numbers (NaN
as ``null``), ``BYTES`` with ``parameters.content_type: "str"`` for strings. (tritonclient's
own per-column requests, binary and gRPC, run against a real server in test_open_inference.py.)
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest
from starlette.testclient import TestClient

from mlops.data.sample_data import SAMPLE_SCHEMA
from serving.app import create_app
from serving.config import ServerConfig
from serving.runtime import LoadedModel
from tests.serving.test_model_router import local_model
from tests.support.serving import MODEL, DemoStore, direct, encoded, v2_body

pytestmark = pytest.mark.slow
INFER = f"/v2/models/{MODEL}/infer"
PREDICT = f"/v1/models/{MODEL}:predict"
CONFIG = ServerConfig(tracking_uri="sqlite:///unused.db", request_log_uri="", reload_interval_s=0)


@pytest.fixture(scope="module")
def model(store: DemoStore) -> LoadedModel:
    return local_model(store.onnx_a, "1")


@pytest.fixture(scope="module")
def client(model: LoadedModel) -> Iterator[TestClient]:
    with TestClient(create_app(CONFIG, model)) as c:
        yield c


def data_rows(store: DemoStore, rows: int, offset: int = 0) -> pd.DataFrame:
    """Holdout rows as they stand in the data: label and protected column included, no categorical missing
    (the pandas codec sends a string column with a missing value as ``pd_json``, not ``str``)."""
    frame = store.holdout.dropna(subset=list(SAMPLE_SCHEMA.categorical_features))
    return frame.iloc[offset : offset + rows][[SAMPLE_SCHEMA.label, *SAMPLE_SCHEMA.features, "sex"]]


def reference(store: DemoStore, frame: pd.DataFrame) -> np.ndarray:
    """ONNX Runtime on the training-time encoding of ``frame``: the score every door must give."""
    from mlops.model.onnx_model import OnnxScorer

    spec = OnnxScorer.load(store.onnx_a / "model.onnx").spec
    return direct(store.onnx_a, spec.encode(frame))


def pandas_codec_request(frame: pd.DataFrame) -> dict[str, Any]:
    """What ``PandasCodec.encode_request(frame, use_bytes=False)`` sends."""
    inputs = []
    for name in frame.columns:
        series = frame[name]
        data = [None if isinstance(v, float) and v != v else v for v in series.tolist()]
        column: dict[str, Any] = {"name": name, "shape": [len(series), 1], "data": data}
        if not pd.api.types.is_numeric_dtype(series):
            column |= {"datatype": "BYTES", "parameters": {"content_type": "str"}}
        else:
            column["datatype"] = {"int64": "INT64", "float64": "FP64"}[str(series.dtype)]
        inputs.append(column)
    return {"parameters": {"content_type": "pd"}, "inputs": inputs}


def test_the_pandas_codec_request_scores_like_the_packed_form(store: DemoStore, client: TestClient) -> None:
    frame = data_rows(store, 8)
    body = pandas_codec_request(frame)
    assert {c["datatype"] for c in body["inputs"]} >= {"BYTES", "FP64"}, "strings and numbers both travel"
    assert any(None in c["data"] for c in body["inputs"]), "a missing number travels as null"
    per_column = client.post(INFER, json=body)
    assert per_column.status_code == 200, per_column.text
    packed = client.post(INFER, json=v2_body(_encode(store, frame)))
    assert packed.status_code == 200, packed.text
    scores = per_column.json()["outputs"][0]["data"]
    assert scores == packed.json()["outputs"][0]["data"]
    np.testing.assert_allclose(scores, reference(store, frame), rtol=1e-6)


def _encode(store: DemoStore, frame: pd.DataFrame) -> np.ndarray:
    from mlops.model.onnx_model import OnnxScorer

    return OnnxScorer.load(store.onnx_a / "model.onnx").spec.encode(frame)


def test_columns_may_come_flat_in_any_order_with_ints_and_unseen_categories(
    store: DemoStore, client: TestClient
) -> None:
    frame = data_rows(store, 3, offset=10).copy()
    frame.loc[frame.index[0], "region"] = "atlantis"  # unseen: code 0, like training's encode
    body = pandas_codec_request(frame[list(reversed(frame.columns))])
    for column in body["inputs"]:
        column["shape"] = [3]
        column["data"] = [v[0] if isinstance(v, list) else v for v in column["data"]]
        if column["name"] == "num_dependents":
            column["datatype"] = "INT32"
            column["data"] = [None if v is None else int(v) for v in column["data"]]
    response = client.post(INFER, json=body)
    assert response.status_code == 200, response.text
    np.testing.assert_allclose(response.json()["outputs"][0]["data"], reference(store, frame), rtol=1e-6)


def test_v1_takes_a_row_as_it_stands_in_the_data(store: DemoStore, client: TestClient) -> None:
    frame = store.holdout.iloc[20:26][[SAMPLE_SCHEMA.label, "sex", *SAMPLE_SCHEMA.features]]
    rows = [
        {k: (None if isinstance(v, float) and v != v else v) for k, v in r.items()}
        for r in frame.to_dict("records")
    ]
    assert all("sex" in row and "default" in row for row in rows)
    response = client.post(PREDICT, json={"instances": rows})
    assert response.status_code == 200, response.text
    np.testing.assert_allclose(response.json()["predictions"], reference(store, frame), rtol=1e-6)


def test_v1_refuses_an_unknown_column_by_name(store: DemoStore, client: TestClient) -> None:
    row = json.loads(data_rows(store, 1).to_json(orient="records"))[0]
    response = client.post(PREDICT, json={"instances": [{**row, "favourite_colour": "red"}]})
    assert response.status_code == 400
    message = response.json()["error"]
    assert "unknown feature(s) ['favourite_colour']" in message
    assert "['default', 'sex'] may be sent and are ignored" in message
    missing = {k: v for k, v in row.items() if k != "income"}
    response = client.post(PREDICT, json={"instances": [missing]})
    assert response.status_code == 400
    assert "lacks feature(s) ['income']" in response.json()["error"]


def column_body(store: DemoStore, **change: Any) -> dict[str, Any]:
    body = pandas_codec_request(data_rows(store, 2))
    for column in body["inputs"]:
        column.update(change.get(column["name"], {}))
    return body


PER_COLUMN_BAD = [
    pytest.param({"extra": {"name": "favourite_colour"}}, "unknown input column(s) ['favourite_colour']", id="unknown"),
    pytest.param({"income": {"name": "default"}}, "appears twice", id="duplicate"),
    pytest.param({"age": {"datatype": "BYTES", "data": ["41", "50"]}}, "'age' is a numeric feature sent as BYTES", id="numbers-as-bytes"),
    pytest.param({"age": {"data": [1e300, 3]}}, "input 'age': row 0 is 1e+300", id="beyond-fp32"),
    pytest.param({"age": {"shape": [3, 1]}}, "input 'age' has 3 rows", id="rows-disagree"),
    pytest.param({"age": {"shape": [2, 2]}}, "a column has shape [N] or [N, 1]", id="shape"),
    pytest.param({"age": {"datatype": "INT64", "data": [1.5, 2]}}, "an integer datatype takes integers", id="fraction-in-int"),
    pytest.param({"age": {"datatype": "INT8", "data": [300, 2]}}, "out of range for INT8", id="int-range"),
    pytest.param({"region": {"data": [7, "north"]}}, "(BYTES) holds 7", id="number-in-bytes"),
    pytest.param({"region": {"datatype": "BOOL"}}, "datatype 'BOOL'", id="datatype"),
    pytest.param({"age": {"data": [True, 3]}}, "holds True", id="bool"),
]  # fmt: skip


@pytest.mark.parametrize(("change", "message"), PER_COLUMN_BAD)
def test_per_column_refusals_name_the_column(
    store: DemoStore, client: TestClient, change: dict[str, Any], message: str
) -> None:
    body = column_body(store, **change)
    if "extra" in change:
        body["inputs"].append({"datatype": "BYTES", "shape": [2, 1], "data": ["a", "b"], **change["extra"]})
    response = client.post(INFER, json=body)
    assert response.status_code == 400, response.text
    assert message in response.json()["error"]


def test_a_missing_feature_column_is_named(store: DemoStore, client: TestClient) -> None:
    body = column_body(store)
    body["inputs"] = [c for c in body["inputs"] if c["name"] != "income"]
    response = client.post(INFER, json=body)
    assert response.status_code == 400
    assert "missing input column(s) ['income']" in response.json()["error"]


def binary_request(frame: pd.DataFrame, surplus: bytes = b"", cut: int = 0) -> tuple[bytes, dict[str, str]]:
    """Per-column binary tensors as tritonclient's HTTP client sends them (BYTES: 4-byte length + UTF-8)."""
    inputs, chunks = [], []
    for name in frame.columns:
        series = frame[name]
        if not pd.api.types.is_numeric_dtype(series):
            raw = b"".join(struct.pack("<I", len(v.encode())) + v.encode() for v in series)
            datatype = "BYTES"
        else:
            raw = series.to_numpy(dtype="<f8").tobytes()
            datatype = "FP64"
        chunks.append(raw)
        inputs.append({"name": name, "shape": [len(series), 1], "datatype": datatype,
                       "parameters": {"binary_data_size": len(raw)}})  # fmt: skip
    header = json.dumps({"inputs": inputs}).encode()
    body = header + b"".join(chunks)
    return body[: len(body) - cut] + surplus, {"Inference-Header-Content-Length": str(len(header))}


def test_binary_per_column_scores_like_json_and_malformed_binary_is_400(
    store: DemoStore, client: TestClient
) -> None:
    frame = data_rows(store, 4, offset=30)
    body, headers = binary_request(frame)
    response = client.post(INFER, content=body, headers=headers)
    assert response.status_code == 200, response.text
    np.testing.assert_allclose(response.json()["outputs"][0]["data"], reference(store, frame), rtol=1e-6)
    for bad, message in [
        (binary_request(frame, surplus=b"\x00" * 3), "3 surplus bytes of binary data"),
        (binary_request(frame, cut=2), "bytes of binary data remain"),
    ]:
        response = client.post(INFER, content=bad[0], headers=bad[1])
        assert response.status_code == 400, response.text
        assert message in response.json()["error"]
    # a BYTES element whose declared length runs past its tensor
    inputs = [{"name": "region", "shape": [1], "datatype": "BYTES", "parameters": {"binary_data_size": 6}}]
    header = json.dumps({"inputs": inputs}).encode()
    response = client.post(
        INFER,
        content=header + struct.pack("<I", 9) + b"no",
        headers={"Inference-Header-Content-Length": str(len(header))},
    )
    assert response.status_code == 400
    assert "element 0 declares 9 bytes but 2 remain" in response.json()["error"]


def test_a_header_length_in_non_ascii_digits_is_400_not_500() -> None:
    """'²' is a digit to str.isdigit() but not to int(): it used to escape as a ValueError (a 500)."""
    from serving.errors import InvalidInput
    from serving.tensors import split_binary

    for length in ("²", "٣", "+3", " 3"):
        with pytest.raises(InvalidInput, match="Inference-Header-Content-Length is"):
            split_binary(b'{"inputs": []}', length)
    assert split_binary(b"{}xyz", "2") == (b"{}", b"xyz")


def test_the_packed_form_is_unchanged_and_features_beside_columns_is_refused(
    store: DemoStore, client: TestClient
) -> None:
    x = encoded(store, 3)
    response = client.post(INFER, json=v2_body(x))
    assert response.status_code == 200
    np.testing.assert_allclose(response.json()["outputs"][0]["data"], direct(store.onnx_a, x), rtol=1e-6)
    body = v2_body(x)
    body["inputs"].append({"name": "age", "shape": [3], "datatype": "FP32", "data": [1, 2, 3]})  # type: ignore[attr-defined]
    response = client.post(INFER, json=body)
    assert response.status_code == 400
    assert "unexpected input(s) ['age']" in response.json()["error"]


def test_a_client_id_no_header_can_carry_is_echoed_percent_encoded(
    store: DemoStore, client: TestClient
) -> None:
    """Found by the generated requests: an id like 'Ā' (not latin-1) or one with a newline used to end as a 500."""
    for client_id, header in [
        ("Ā", "%C4%80"),
        ("a\nb", "a%0Ab"),
        ("plain-id_1", "plain-id_1"),
        (" padded ", "%20padded%20"),
    ]:
        response = client.post(INFER, json={**v2_body(encoded(store, 1)), "id": client_id})
        assert response.status_code == 200, response.text
        assert response.json()["id"] == client_id and response.headers["x-request-id"] == header
