"""Bad input and auth against a real server: clear 4xx JSON errors, and the server keeps serving."""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import numpy as np
import pytest

from mlops.data.sample_data import SAMPLE_SCHEMA
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
TOKEN = "s3cret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
LIMIT = 16_384


@pytest.fixture(scope="module")
def server(store: DemoStore) -> Iterator[ServerProcess]:
    flags = (
        "--auth-token",
        TOKEN,
        "--max-payload-bytes",
        str(LIMIT),
        "--no-request-log",
        "--reload-interval-s",
        "0",
    )
    with running_server(store, *flags) as process:
        yield process


@pytest.fixture(scope="module")
def client(server: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, headers=AUTH, timeout=10) as c:
        yield c


def assert_still_serving(client: httpx.Client, store: DemoStore) -> None:
    x = encoded(store, 2, offset=300)
    response = client.post(f"/v2/models/{MODEL}/infer", json=v2_body(x))
    assert response.status_code == 200, response.text
    np.testing.assert_allclose(response.json()["outputs"][0]["data"], direct(store.onnx_a, x), rtol=1e-6)


def features(shape: Any, data: Any, datatype: str = "FP32", name: str = "features") -> dict[str, Any]:
    return {"inputs": [{"name": name, "shape": shape, "datatype": datatype, "data": data}]}


ROW = [0.5] * 20
CODES = [0.5] * 14 + [1] * 6  # 14 numeric features, then 6 categorical codes (1 = first category)


CODES_NAMES = (*SAMPLE_SCHEMA.numeric_features, *SAMPLE_SCHEMA.categorical_features)


def feature_row(store: DemoStore) -> dict[str, Any]:
    """The first holdout row as a V1 client sends it: feature name -> value, null for missing."""
    row = store.holdout.iloc[0]
    return {name: (None if row[name] != row[name] else row[name]) for name in CODES_NAMES}


def with_value(column: int, value: Any) -> list[Any]:
    return [*CODES[:column], value, *CODES[column + 1 :]]


V2_BAD = [
    pytest.param(b"{not json", "not valid JSON", id="malformed-json"),
    pytest.param(b"", "empty", id="empty-body"),
    pytest.param([1, 2], "JSON object with 'inputs'", id="not-an-object"),
    pytest.param({"outputs": []}, "no 'inputs' list", id="no-inputs"),
    pytest.param(features([1, 20], ROW, name="x"), "missing input 'features'", id="missing-input"),
    pytest.param(
        {
            "inputs": [
                features([1, 20], ROW)["inputs"][0],
                {"name": "extra", "shape": [1], "datatype": "FP32", "data": [1]},
            ]
        },
        "unexpected input",
        id="extra-input",
    ),
    pytest.param(features([1, 20], ROW, datatype="INT64"), "datatype 'INT64'", id="wrong-datatype"),
    pytest.param(features([1, 20], ["a"] * 20, datatype="BYTES"), "datatype 'BYTES'", id="bytes-datatype"),
    pytest.param(features([1, 20], ["a"] * 20), "holds strings", id="strings-as-fp32"),
    pytest.param(features([1, 20], [True] * 20), "holds bool", id="bools-as-fp32"),
    pytest.param(features([1, 19], ROW[:19]), "shape [1, 19]", id="wrong-width"),
    pytest.param(features([1, 20, 1], ROW), "shape [1, 20, 1]", id="three-dims"),
    pytest.param(features([2, 20], ROW), "expected [2, 20]", id="too-few-values"),
    pytest.param(features([2, 20], [ROW, ROW[:5]]), "ragged", id="ragged-rows"),
    pytest.param(features([1, 20], [*ROW[:19], "x"]), "strings", id="one-string"),
    pytest.param(features([1, 20], [*ROW[:19], {"a": 1}]), "only numbers", id="object-in-data"),
    pytest.param(
        {"inputs": [{"name": "features", "shape": [1, 20], "datatype": "FP32"}]}, "no 'data'", id="no-data"
    ),
    pytest.param(
        {**features([1, 20], ROW), "outputs": [{"name": "logit"}]},
        "one output 'probability'",
        id="bad-output",
    ),
    pytest.param(
        {**features([1, 20], CODES), "outputs": "probability"},
        "'outputs' is 'probability' (str)",
        id="outputs-not-a-list",
    ),
    pytest.param(
        features([1, 20], with_value(1, 3.5e38)),
        "feature 'income' (column 1) is 3.5e+38, which is not a finite FP32",
        id="beyond-fp32",
    ),
    pytest.param(
        features([1, 20], with_value(0, 1e300), datatype="FP64"),
        "feature 'age' (column 0) is 1e+300, which is not a finite FP32",
        id="fp64-beyond-fp32",
    ),
    pytest.param(
        features([1, 20], with_value(19, -7)),
        "feature 'region' (column 19) is -7, which is not a code",
        id="negative-code",
    ),
    pytest.param(
        features([1, 20], with_value(14, 99)),
        "feature 'employment_type' (column 14) is 99, which is not a code",
        id="code-too-large",
    ),
    pytest.param(
        features([1, 20], with_value(15, 3.5)),
        "feature 'home_ownership' (column 15) is 3.5, which is not a code",
        id="fractional-code",
    ),
    pytest.param(
        {
            "inputs": [
                {
                    "name": "features",
                    "shape": [1, 20],
                    "datatype": "FP32",
                    "parameters": {"binary_data_size": 80},
                }
            ]
        },
        "declares binary_data_size 80 but 0 bytes follow",
        id="binary-size-without-bytes",
    ),
]


@pytest.mark.parametrize(("body", "message"), V2_BAD)
def test_bad_v2_requests_get_400_with_a_clear_message(
    client: httpx.Client, store: DemoStore, body: Any, message: str
) -> None:
    kwargs = {"content": body} if isinstance(body, bytes) else {"json": body}
    response = client.post(f"/v2/models/{MODEL}/infer", **kwargs)
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == "application/json"
    assert message in response.json()["error"]
    assert_still_serving(client, store)


V1_BAD = [
    pytest.param({"rows": [ROW]}, "with 'instances'", id="no-instances"),
    pytest.param({"instances": "x"}, "must be a list", id="instances-not-list"),
    pytest.param({"instances": [ROW, {"age": 1}]}, "mixes", id="mixed-forms"),
    pytest.param({"instances": [{"age": 30}]}, "lacks feature(s)", id="missing-named-feature"),
    pytest.param({"instances": [ROW[:3]]}, "shape [1, 3]", id="short-row"),
    pytest.param({"instances": [7]}, "each instance", id="scalar-instance"),
    pytest.param(
        {"instances": [with_value(2, 1e39)]}, "is 1e+39, which is not a finite FP32", id="v1-overflow"
    ),
    pytest.param({"instances": [with_value(17, 42)]}, "is 42, which is not a code", id="v1-bad-code"),
]


@pytest.mark.parametrize(("body", "message"), V1_BAD)
def test_bad_v1_requests_get_400_with_a_clear_message(
    client: httpx.Client, store: DemoStore, body: Any, message: str
) -> None:
    response = client.post(f"/v1/models/{MODEL}:predict", json=body)
    assert response.status_code == 400, response.text
    assert message in response.json()["error"]
    assert_still_serving(client, store)


def test_named_row_with_a_non_numeric_value_names_the_feature(client: httpx.Client, store: DemoStore) -> None:
    row = feature_row(store) | {"income": "lots"}
    response = client.post(f"/v1/models/{MODEL}:predict", json={"instances": [row]})
    assert response.status_code == 400
    assert "'income' is 'lots'" in response.json()["error"]


def test_named_row_with_an_extra_feature_is_refused_by_name(client: httpx.Client, store: DemoStore) -> None:
    row = feature_row(store) | {"favourite_colour": "teal"}
    response = client.post(f"/v1/models/{MODEL}:predict", json={"instances": [row]})
    assert response.status_code == 400
    assert "unknown feature(s) ['favourite_colour']; this model takes exactly" in response.json()["error"]


def test_named_row_beyond_fp32_names_feature_and_value(client: httpx.Client, store: DemoStore) -> None:
    row = feature_row(store) | {"savings_balance": 1e300}
    response = client.post(f"/v1/models/{MODEL}:predict", json={"instances": [row]})
    assert response.status_code == 400
    assert "feature 'savings_balance' (column 11) is 1e+300" in response.json()["error"]


def test_binary_body_with_a_bad_header_length_is_400(client: httpx.Client) -> None:
    header = b'{"inputs":[{"name":"features","shape":[1,20],"datatype":"FP32","parameters":{"binary_data_size":80}}]}'
    body = header + np.zeros(20, dtype="<f4").tobytes()
    for length, message in (("9999", f"the body has {len(body)} bytes"), ("abc", "is 'abc'")):
        response = client.post(
            f"/v2/models/{MODEL}/infer", content=body, headers={"Inference-Header-Content-Length": length}
        )
        assert response.status_code == 400, response.text
        assert message in response.json()["error"]
    short = header + np.zeros(19, dtype="<f4").tobytes()
    response = client.post(
        f"/v2/models/{MODEL}/infer",
        content=short,
        headers={"Inference-Header-Content-Length": str(len(header))},
    )
    assert response.status_code == 400
    assert "declares binary_data_size 80 but 76 bytes follow" in response.json()["error"]


def test_non_finite_binary_value_is_refused_and_nan_means_missing(
    client: httpx.Client, store: DemoStore
) -> None:
    x = encoded(store, 2, offset=10)
    header = b'{"inputs":[{"name":"features","shape":[2,20],"datatype":"FP32","parameters":{"binary_data_size":160}}]}'
    ok = client.post(
        f"/v2/models/{MODEL}/infer",
        content=header + x.astype("<f4").tobytes(),
        headers={"Inference-Header-Content-Length": str(len(header))},
    )
    assert ok.status_code == 200, ok.text
    np.testing.assert_allclose(ok.json()["outputs"][0]["data"], direct(store.onnx_a, x), rtol=1e-6)
    bad = x.copy()
    bad[1, 3] = np.inf
    response = client.post(
        f"/v2/models/{MODEL}/infer",
        content=header + bad.astype("<f4").tobytes(),
        headers={"Inference-Header-Content-Length": str(len(header))},
    )
    assert response.status_code == 400
    assert "row 1, feature 'loan_term_months' (column 3) is inf" in response.json()["error"]


def test_oversized_payload_gets_413_with_or_without_content_length(
    client: httpx.Client, store: DemoStore
) -> None:
    big = features([LIMIT, 20], [0.0] * (LIMIT * 20))
    response = client.post(f"/v2/models/{MODEL}/infer", json=big)
    assert response.status_code == 413
    assert f"limit of {LIMIT} bytes" in response.json()["error"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: the server must count while reading
        for _ in range(LIMIT // 1024 + 2):
            yield b" " * 1024

    response = client.post(f"/v2/models/{MODEL}/infer", content=chunks())
    assert response.status_code == 413
    assert_still_serving(client, store)


@pytest.mark.parametrize(
    ("method", "path", "message"),
    [
        ("POST", "/v2/models/nope/infer", "model 'nope' is not served here"),
        ("POST", "/v1/models/nope:predict", "model 'nope' is not served here"),
        ("GET", "/v2/models/nope", "model 'nope' is not served here"),
        ("GET", "/v2/models/nope/ready", "model 'nope' is not served here"),
        ("POST", f"/v2/models/{MODEL}/versions/9/infer", "version '9' is not loaded"),
        ("GET", f"/v2/models/{MODEL}/versions/9", "version '9' is not loaded"),
        ("GET", "/v3/whatever", "no route GET /v3/whatever"),
    ],
)
def test_unknown_model_version_or_route_is_404(
    client: httpx.Client, store: DemoStore, method: str, path: str, message: str
) -> None:
    response = client.request(method, path, json=v2_body(encoded(store, 1)))
    assert response.status_code == 404, response.text
    assert message in response.json()["error"]


def test_wrong_method_is_405_json(client: httpx.Client) -> None:
    response = client.get(f"/v2/models/{MODEL}/infer")
    assert response.status_code == 405
    assert "no route GET" in response.json()["error"]


def test_auth_required_except_health(server: ServerProcess, store: DemoStore) -> None:
    body = v2_body(encoded(store, 1))
    for path in ("/", "/v2/health/live", "/v2/health/ready", f"/v2/models/{MODEL}/ready"):
        assert httpx.get(server.url + path).status_code == 200
    assert httpx.get(f"{server.url}/v2/models/{MODEL}/versions/1/ready").json()["ready"] is True
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
        for method, path in (
            ("POST", f"/v2/models/{MODEL}/infer"),
            ("POST", f"/v1/models/{MODEL}:predict"),
            ("GET", f"/v2/models/{MODEL}"),
            ("GET", "/metrics"),
        ):
            response = httpx.request(method, server.url + path, json=body, headers=headers)
            assert response.status_code == 401, (path, headers)
            assert response.headers["www-authenticate"] == "Bearer"
            assert "bearer token" in response.json()["error"]
    assert httpx.get(f"{server.url}/metrics", headers=AUTH).status_code == 200


@pytest.mark.parametrize("scheme", ["bearer", "BEARER", "Bearer"])
def test_bearer_scheme_is_case_insensitive(server: ServerProcess, store: DemoStore, scheme: str) -> None:
    response = httpx.post(
        f"{server.url}/v2/models/{MODEL}/infer",
        json=v2_body(encoded(store, 1), request_id="x"),
        headers={"Authorization": f"{scheme} {TOKEN}"},
    )
    assert response.status_code == 200, response.text
    wrong = httpx.get(f"{server.url}/metrics", headers={"Authorization": f"bearer {TOKEN}x"})
    assert wrong.status_code == 401


def test_integer_request_id_is_echoed(client: httpx.Client, store: DemoStore) -> None:
    body = {**v2_body(encoded(store, 1)), "id": 42}
    response = client.post(f"/v2/models/{MODEL}/infer", json=body)
    assert response.status_code == 200 and response.json()["id"] == 42


def test_client_that_disconnects_mid_body_is_counted_as_client_closed(
    client: httpx.Client, server: ServerProcess
) -> None:
    port = int(server.url.rsplit(":", 1)[1])
    for _ in range(3):
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(
                f"POST /v2/models/{MODEL}/infer HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
                'Content-Type: application/json\r\nContent-Length: 5000\r\n\r\n{"inputs": ['.encode()
            )
            time.sleep(0.05)
    deadline = time.monotonic() + 5
    while True:
        metrics = client.get("/metrics").text
        closed = re.search(r'mlops_serving_requests_total\{[^}]*code="499"[^}]*\} (\S+)', metrics)
        if closed and float(closed.group(1)) >= 3 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert closed and float(closed.group(1)) >= 3, metrics
    assert 'reason="client_closed"' in metrics
    assert 'code="500"' not in metrics and 'reason="internal"' not in metrics


def test_under_mixed_load_no_valid_request_is_lost(client: httpx.Client, store: DemoStore) -> None:
    x = encoded(store, 120, offset=400)
    expected = direct(store.onnx_a, x)

    def call(i: int) -> tuple[int, int, Any]:
        if i % 3 == 0:
            response = client.post(f"/v2/models/{MODEL}/infer", content=b'{"inputs": [')
        else:
            response = client.post(f"/v2/models/{MODEL}/infer", json=v2_body(x[i : i + 1]))
        return i, response.status_code, response.json()

    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(call, range(len(x))))
    for i, status, body in results:
        if i % 3 == 0:
            assert status == 400 and "not valid JSON" in body["error"]
        else:
            assert status == 200, body
            assert body["outputs"][0]["data"] == pytest.approx([float(expected[i])], rel=1e-6)
