"""The data plane on its own: no HTTP, no gRPC, only its protocol-neutral requests and answers.

What the transports share happens here once: routing (rollout included), the model's
input contract, batching, the non-finite check, the request log and the metrics. These
tests drive :class:`~serving.dataplane.DataPlane` with a request no transport carried,
then check that REST's decoders hand it exactly what that request does, and that every
error class has a status on both transports. (That REST and gRPC answer the same request
alike, errors included, is checked end to end with tritonclient in test_open_inference.py,
which cannot share a process with the server's own gRPC stubs.)
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import grpc
import numpy as np
import orjson
import pandas as pd
import pytest

from mlops.model.onnx_model import OnnxScorer
from serving import protocol
from serving.app import create_plane
from serving.config import ServerConfig
from serving.dataplane import (
    DataPlane,
    InferRequest,
    InferResponse,
    ModelContract,
    ModelStatus,
    TensorMetadata,
)
from serving.errors import (
    GRPC_STATUS,
    HTTP_STATUS,
    REASON,
    ClientClosed,
    InternalError,
    InvalidInput,
    MethodNotAllowed,
    ModelNotFound,
    PayloadTooLarge,
    ServingError,
    Unauthenticated,
    VersionGone,
    grpc_status,
    http_status,
)
from serving.lifecycle import ServerLifecycle
from serving.routing.rollout_router import RolloutRouter, TrafficPlan
from serving.runtime import LoadedModel
from tests.serving.test_model_router import local_model
from tests.support.serving import MODEL, DemoStore, direct, encoded

pytestmark = pytest.mark.slow
CONFIG = ServerConfig(
    tracking_uri="sqlite:///unused.db", max_batch_size=8, request_log_uri="", reload_interval_s=0
)
PROTOCOL = "neutral"
T = TypeVar("T")


@dataclass
class Call:
    """A request as the router reads it, carried by no transport."""

    path_params: dict[str, str]
    headers: dict[str, str] = field(default_factory=dict)


class Rows:
    """An input already decoded to a matrix: the data plane's view with the wire taken away."""

    where = "input 'features'"

    def __init__(self, values: np.ndarray):
        self.values = values

    def read(self, contract: ModelContract) -> np.ndarray:
        return self.values


class Broken:
    """A decoder with a bug: what no check foresaw."""

    where = "input 'features'"

    def read(self, contract: ModelContract) -> np.ndarray:
        raise RuntimeError("decoder bug")


def request(inputs: Any, name: str = MODEL, version: str | None = None, **fields: Any) -> InferRequest:
    params = {"name": name} if version is None else {"name": name, "version": version}
    return InferRequest(Call(params), inputs, PROTOCOL, **fields)


@asynccontextmanager
async def running(plane: DataPlane, config: ServerConfig = CONFIG) -> AsyncIterator[DataPlane]:
    """``plane`` with its batch workers (and request log) started, as the app's lifespan starts them."""
    lifecycle = ServerLifecycle(config, plane, None, None)
    await lifecycle.start()
    try:
        yield plane
    finally:
        await lifecycle.stop()


def run(plane: DataPlane, scenario: Callable[[DataPlane], Awaitable[T]], config: ServerConfig = CONFIG) -> T:
    async def main() -> T:
        async with running(plane, config):
            return await scenario(plane)

    return asyncio.run(main())


def sample(plane: DataPlane, name: str, **labels: str) -> float:
    return plane.metrics.registry.get_sample_value(name, {"model": MODEL, **labels}) or 0.0


@pytest.fixture(scope="module")
def model(store: DemoStore) -> LoadedModel:
    return local_model(store.onnx_a, "1")


def test_health_and_metadata(store: DemoStore, model: LoadedModel) -> None:
    plane = create_plane(CONFIG, model)
    spec = OnnxScorer.load(store.onnx_a / "model.onnx").spec
    assert plane.live() and plane.ready()
    server = plane.server_metadata()
    assert server.name == "mlops-serving" and server.extensions == ("binary_tensor_data",)
    for call in (Call({"name": MODEL}), Call({"name": MODEL, "version": "1"})):
        meta = plane.model_metadata(call)
        assert (meta.name, meta.versions, meta.platform) == (MODEL, ["1"], "onnxruntime_onnx")
        assert meta.inputs == [TensorMetadata("features", "FP32", [-1, spec.n_features])]
        assert meta.outputs == [TensorMetadata("probability", "FP32", [-1])]
        assert meta.parameters["feature_names"] == list(spec.names)
        assert plane.model_ready(call) == ModelStatus(MODEL, "1", True)
    # REST's JSON is the record as it stands, in the protocol's key order.
    assert list(orjson.loads(protocol.model_metadata(MODEL, "1", spec, "fp32"))) == [
        "name", "versions", "platform", "inputs", "outputs", "parameters",
    ]  # fmt: skip
    with pytest.raises(ModelNotFound, match="model 'nope' is not served here"):
        plane.model_ready(Call({"name": "nope"}))
    with pytest.raises(ModelNotFound, match="version '9' is not loaded"):
        plane.model_metadata(Call({"name": MODEL, "version": "9"}))
    # A metadata refusal is counted; a readiness probe's "not served" is an answer, not an error.
    assert sample(plane, "mlops_serving_errors_total", version="1", reason="not_found") == 1.0


def test_concurrent_requests_are_batched_scored_logged_and_counted(
    store: DemoStore, model: LoadedModel, tmp_path: Path
) -> None:
    config = CONFIG.model_copy(update={"request_log_uri": str(tmp_path), "request_log_flush_s": 60.0})
    plane = create_plane(config, model)
    x = encoded(store, 5, offset=20)
    assert np.isnan(x).any(), "missing values travel as NaN"

    async def five_at_once(plane: DataPlane) -> list[InferResponse]:
        calls = [request(Rows(x[i : i + 1]), id=i, log_id=f"r{i}") for i in range(5)]
        return await asyncio.gather(*(plane.infer(call) for call in calls))

    answers = run(plane, five_at_once, config)
    expected = direct(store.onnx_a, x)
    for i, answer in enumerate(answers):
        assert (answer.model_name, answer.model_version, answer.id) == (MODEL, "1", i)
        assert answer.probabilities.dtype == np.float32
        np.testing.assert_allclose(answer.probabilities, expected[i : i + 1], rtol=1e-6)
    # Five concurrent requests, one ONNX Runtime call: batching hangs off the data plane.
    assert sample(plane, "mlops_serving_batch_size_rows_count", version="1") == 1.0
    assert sample(plane, "mlops_serving_batch_size_rows_sum", version="1") == 5.0
    assert sample(plane, "mlops_serving_requests_total", version="1", protocol=PROTOCOL, code="200") == 5.0
    latency = "mlops_serving_request_latency_seconds_count"
    assert sample(plane, latency, version="1", protocol=PROTOCOL) == 5.0
    # The request log kept every row under the id the transport gave (flushed on stop).
    logged = pd.concat(pd.read_parquet(f) for f in (tmp_path / MODEL).glob("*.parquet"))
    logged = logged.sort_values("request_id")
    assert list(logged["request_id"]) == [f"r{i}" for i in range(5)]
    np.testing.assert_allclose(logged["prediction"], expected, rtol=1e-6)
    assert (logged["model_version"] == "1").all()


def bad_value(store: DemoStore, column: int, value: float) -> Rows:
    x = encoded(store, 2, offset=3)
    x[1, column] = value
    return Rows(x)


def test_refusals_are_typed_counted_and_never_reach_the_model(store: DemoStore, model: LoadedModel) -> None:
    plane = create_plane(CONFIG, model)
    rows = Rows(encoded(store, 1))
    cases: list[tuple[InferRequest, type[ServingError], str]] = [
        (request(rows, name="nope"), ModelNotFound, "model 'nope' is not served here"),
        (request(rows, version="9"), ModelNotFound, "version '9' is not loaded"),
        (
            request(rows, outputs=["logit"]),
            InvalidInput,
            "requested output 'logit'; this model has one output 'probability'",
        ),
        (
            request(bad_value(store, 1, np.inf)),
            InvalidInput,
            "input 'features': row 1, feature 'income' (column 1) is inf, which is not a finite FP32",
        ),
        (
            request(bad_value(store, 19, -7)),
            InvalidInput,
            "row 1, feature 'region' (column 19) is -7, which is not a code",
        ),
    ]

    async def refused(plane: DataPlane) -> list[ServingError]:
        errors = []
        for call, _, _ in cases:
            with pytest.raises(ServingError) as info:
                await plane.infer(call)
            errors.append(info.value)
        return errors

    for error, (_, kind, message) in zip(run(plane, refused), cases, strict=True):
        assert type(error) is kind and message in error.message
    assert sample(plane, "mlops_serving_requests_total", version="1", protocol=PROTOCOL, code="404") == 2.0
    assert sample(plane, "mlops_serving_requests_total", version="1", protocol=PROTOCOL, code="400") == 3.0
    assert sample(plane, "mlops_serving_errors_total", version="1", reason="not_found") == 2.0
    assert sample(plane, "mlops_serving_errors_total", version="1", reason="bad_request") == 3.0
    assert sample(plane, "mlops_serving_batch_size_rows_count", version="1") == 0.0


def test_an_unforeseen_failure_is_an_internal_error_logged_and_counted(
    model: LoadedModel, caplog: pytest.LogCaptureFixture
) -> None:
    plane = create_plane(CONFIG, model)

    async def broken(plane: DataPlane) -> ServingError:
        with pytest.raises(InternalError) as info:
            await plane.infer(request(Broken()))
        return info.value

    with caplog.at_level(logging.ERROR, logger="serving"):
        error = run(plane, broken)
    assert error.message == "inference failed: RuntimeError: decoder bug"
    assert isinstance(error.__cause__, RuntimeError)
    assert any(r.message == "inference failed" and r.exc_info for r in caplog.records)
    assert sample(plane, "mlops_serving_requests_total", version="1", protocol=PROTOCOL, code="500") == 1.0
    assert sample(plane, "mlops_serving_errors_total", version="1", reason="internal") == 1.0


def test_the_rollout_router_splits_traffic_under_the_plane(store: DemoStore, model: LoadedModel) -> None:
    challenger = local_model(store.onnx_b, "2")
    plane = create_plane(CONFIG, model, load={"2": challenger}.__getitem__)
    router = plane.router
    assert isinstance(router, RolloutRouter)
    x = encoded(store, 3, offset=40)

    async def canary(plane: DataPlane) -> tuple[InferResponse, InferResponse]:
        await router.apply(TrafficPlan(challenger="2", percent=100))
        return await plane.infer(request(Rows(x))), await plane.infer(request(Rows(x), version="1"))

    to_challenger, pinned = run(plane, canary)
    assert to_challenger.model_version == "2" and pinned.model_version == "1"
    np.testing.assert_allclose(to_challenger.probabilities, direct(store.onnx_b, x), rtol=1e-6)
    np.testing.assert_allclose(pinned.probabilities, direct(store.onnx_a, x), rtol=1e-6)
    scored = "mlops_serving_scored_requests_total"
    assert sample(plane, scored, version="2", role="challenger", outcome="ok") == 1.0
    assert sample(plane, scored, version="1", role="champion", outcome="ok") == 1.0


def test_rest_decoders_hand_the_plane_the_same_rows(store: DemoStore, model: LoadedModel) -> None:
    """V2 JSON, V2 binary and V1 (lists and named rows) decode to what the neutral request carries."""
    plane = create_plane(CONFIG, model)
    frame = store.holdout.iloc[60:64]
    x = OnnxScorer.load(store.onnx_a / "model.onnx").spec.encode(frame)
    json_rows = [[None if np.isnan(v) else float(v) for v in row] for row in x]
    tensor = {"name": "features", "datatype": "FP32", "shape": list(x.shape)}
    binary = x.astype("<f4").tobytes()
    named = [
        {name: (None if value != value else value) for name, value in row.items()}
        for row in frame[list(plane.contract(model).bounds.names)].to_dict(orient="records")
    ]
    forms = {
        "neutral": Rows(x),
        "v2 json": protocol.V2Inputs({"inputs": [{**tensor, "data": json_rows}]}),
        "v2 binary": protocol.V2Inputs(
            {"inputs": [{**tensor, "parameters": {"binary_data_size": len(binary)}}]}, binary
        ),
        "v1 lists": protocol.V1Inputs({"instances": json_rows}),
        "v1 named rows": protocol.V1Inputs({"instances": named}),
    }

    async def each(plane: DataPlane) -> dict[str, np.ndarray]:
        return {form: (await plane.infer(request(inputs))).probabilities for form, inputs in forms.items()}

    answers = run(plane, each)
    for form, probabilities in answers.items():
        np.testing.assert_array_equal(probabilities, answers["neutral"], err_msg=form)
    np.testing.assert_allclose(answers["neutral"], direct(store.onnx_a, x), rtol=1e-6)


def test_v2_wire_errors_name_the_model_contract(model: LoadedModel) -> None:
    """REST's structural checks point at the fix in the model's terms (its width), via the contract."""
    contract = ModelContract(model.spec)
    width = contract.width
    for payload, message in [
        ([1, 2], f"a V2 inference request is a JSON object with 'inputs'; {contract.expected}"),
        ({"inputs": [{"name": "x"}]}, "missing input 'features' (got ['x'])"),
        ({"inputs": [{"name": "features", "datatype": ["FP32"]}]}, "datatype ['FP32']"),
        ({"inputs": [{"name": "features", "datatype": "FP32", "shape": [1, True]}]}, "shape [1, True]"),
        (
            {"inputs": [{"name": "features", "datatype": "FP32", "shape": [1, width]}]},
            f"input 'features' has no 'data' (nor binary_data_size); {contract.expected}",
        ),
    ]:
        with pytest.raises(InvalidInput) as info:
            protocol.V2Inputs(payload).read(contract)
        assert message in info.value.message
    assert f"shape [N, {width}]" in contract.expected


def subclasses(cls: type[ServingError]) -> list[type[ServingError]]:
    found = []
    for sub in cls.__subclasses__():
        found += [sub, *subclasses(sub)]
    return found


def test_every_error_class_has_a_status_on_each_transport() -> None:
    for cls in subclasses(ServingError):
        listed = [c for c in cls.__mro__ if c in HTTP_STATUS and c is not ServingError]
        assert listed, f"{cls.__name__} (or a parent below ServingError) is missing from HTTP_STATUS"
        assert any(c in GRPC_STATUS for c in listed), f"{cls.__name__} is missing from GRPC_STATUS"
        assert any(c in REASON for c in listed), f"{cls.__name__} is missing from REASON"
        error = cls("x")
        assert 400 <= http_status(error) < 600
        assert grpc_status(error) in grpc.StatusCode.__members__
    for cls, http, code in [
        (InvalidInput, 400, "INVALID_ARGUMENT"),
        (Unauthenticated, 401, "UNAUTHENTICATED"),
        (ModelNotFound, 404, "NOT_FOUND"),
        (VersionGone, 404, "NOT_FOUND"),
        (PayloadTooLarge, 413, "RESOURCE_EXHAUSTED"),
        (ClientClosed, 499, "CANCELLED"),
        (InternalError, 500, "INTERNAL"),
    ]:
        assert (http_status(cls("x")), grpc_status(cls("x"))) == (http, code), cls.__name__
    for cls, reason in [
        (InvalidInput, "bad_request"),
        (Unauthenticated, "unauthorized"),
        (VersionGone, "not_found"),
        (MethodNotAllowed, "client_error"),
        (PayloadTooLarge, "payload_too_large"),
        (ClientClosed, "client_closed"),
        (InternalError, "internal"),
        (ServingError, "internal"),
    ]:
        assert cls("x").reason == reason, cls.__name__


def test_request_ids_are_unique_hex_and_differ_between_servers() -> None:
    from serving.dataplane import RequestIds

    ids, other = RequestIds(), RequestIds()
    made = [ids.new() for _ in range(10_000)]
    assert len(set(made)) == len(made)
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in made), "32 hex digits, like uuid4().hex"
    assert other.new()[:16] != made[0][:16], "each server draws its own random prefix"
