"""Hypothesis-generated requests against a real server: every answer is 2xx or 4xx, never 5xx.

The generator mixes well-formed V2 requests carrying extreme values (huge, tiny,
negative, fractional codes, nulls, integers beyond 64 bits), malformed structure
(wrong shapes, datatypes, outputs, ids, parameters), binary bodies with random header
lengths and sizes, and V1 rows with random named features. Bounded (200 examples per
test) so CI stays fast; the server is started once for the module.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlops.data.sample_data import SAMPLE_SCHEMA
from tests.support.serving import MODEL, DemoStore, ServerProcess, running_server

pytestmark = pytest.mark.slow
WIDTH = len(SAMPLE_SCHEMA.numeric_features) + len(SAMPLE_SCHEMA.categorical_features)
SETTINGS = settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

numbers = st.one_of(
    st.none(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0, 1, -7, 99, 3.5, 1e30, 3.5e38, -3.5e38, 1e300, 5e-324]),
)
json_values = st.recursive(
    st.none() | st.booleans() | numbers | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=12,
)


@st.composite
def v2_requests(draw: st.DrawFn) -> bytes:
    rows = draw(st.integers(min_value=0, max_value=4))
    shape = draw(st.sampled_from([[rows, WIDTH], [rows, WIDTH - 1], [rows], [rows, WIDTH, 1], ["x", WIDTH]]))
    data = draw(st.lists(numbers, min_size=rows * WIDTH, max_size=rows * WIDTH) | json_values)
    tensor: dict[str, Any] = {
        "name": draw(st.sampled_from(["features", "features", "x"])),
        "datatype": draw(st.sampled_from(["FP32", "FP64", "INT64", "BYTES", None])),
        "shape": shape,
        "data": data,
    }
    body: dict[str, Any] = {"inputs": [tensor]}
    if draw(st.booleans()):
        body["outputs"] = draw(st.sampled_from(["probability", [{"name": "probability"}], [1]]) | json_values)
    if draw(st.booleans()):
        body["id"] = draw(json_values)
    if draw(st.booleans()):
        body["parameters"] = draw(st.sampled_from([{"binary_data_output": True}, []]) | json_values)
    return json.dumps(body).encode()


@st.composite
def binary_requests(draw: st.DrawFn) -> tuple[bytes, dict[str, str]]:
    rows = draw(st.integers(min_value=0, max_value=3))
    datatype = draw(st.sampled_from(["FP32", "FP64"]))
    declared = draw(st.sampled_from([rows * WIDTH * (4 if datatype == "FP32" else 8), 0, 7, -1, "x"]))
    header = json.dumps(
        {
            "inputs": [
                {
                    "name": "features",
                    "shape": [rows, WIDTH],
                    "datatype": datatype,
                    "parameters": {"binary_data_size": declared},
                }
            ],
            "outputs": [{"name": "probability", "parameters": {"binary_data": draw(st.booleans())}}],
        }
    ).encode()
    values = draw(
        st.lists(
            st.floats(width=32) | st.sampled_from([0.0, 1.0, 7.0, -7.0, 99.0, 0.5]),
            min_size=rows * WIDTH,
            max_size=rows * WIDTH,
        )
    )
    raw = np.asarray(values, dtype="<f4" if datatype == "FP32" else "<f8").tobytes()
    raw += draw(st.binary(max_size=8))
    length = draw(st.sampled_from([str(len(header)), str(len(header) + 3), "0", "-5", "abc", "999999"]))
    return header + raw, {"Inference-Header-Content-Length": length}


@st.composite
def v1_requests(draw: st.DrawFn) -> bytes:
    names = [*SAMPLE_SCHEMA.numeric_features, *SAMPLE_SCHEMA.categorical_features]
    row = {name: draw(numbers | st.text(max_size=4)) for name in names}
    if draw(st.booleans()):
        row.pop(draw(st.sampled_from(names)))
    if draw(st.booleans()):
        row[draw(st.text(min_size=1, max_size=6))] = draw(numbers)
    instances = draw(st.sampled_from([[row], [list(row.values())], row, [row, [1, 2]]]))
    return json.dumps({"instances": instances}).encode()


@pytest.fixture(scope="module")
def server(store: DemoStore) -> Iterator[ServerProcess]:
    with running_server(store, "--no-request-log", "--reload-interval-s", "0") as process:
        yield process


@pytest.fixture(scope="module")
def client(server: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=10) as c:
        yield c


def assert_client_error_or_ok(response: httpx.Response) -> None:
    assert response.status_code < 500, response.text
    if response.status_code >= 400:
        assert response.json()["error"], "every refusal explains itself"
    else:
        body = response.content
        cut = int(response.headers.get("inference-header-content-length", len(body)))
        outputs = json.loads(body[:cut]).get("outputs")
        if outputs and "data" in outputs[0]:
            assert all(v is not None and np.isfinite(v) for v in outputs[0]["data"])


@SETTINGS
@given(body=v2_requests())
def test_generated_v2_requests_never_get_a_5xx(client: httpx.Client, body: bytes) -> None:
    assert_client_error_or_ok(client.post(f"/v2/models/{MODEL}/infer", content=body))


@SETTINGS
@given(request=binary_requests())
def test_generated_binary_requests_never_get_a_5xx(
    client: httpx.Client, request: tuple[bytes, dict[str, str]]
) -> None:
    body, headers = request
    assert_client_error_or_ok(client.post(f"/v2/models/{MODEL}/infer", content=body, headers=headers))


@SETTINGS
@given(body=v1_requests())
def test_generated_v1_requests_never_get_a_5xx(client: httpx.Client, body: bytes) -> None:
    assert_client_error_or_ok(client.post(f"/v1/models/{MODEL}:predict", content=body))
