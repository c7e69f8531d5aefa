"""Both gRPC servers (grpc.aio, the default, and the thread-pool ``grpc.server`` of ``--grpc-threads N``)
answer, refuse and count alike: the same data plane behind either.

Messages come from tritonclient's generated modules, not ``serving.proto``: protobuf refuses both in
one process, and the other serving tests use tritonclient (serving/README.md, gRPC).
"""

from __future__ import annotations

import threading

import grpc
import httpx
import numpy as np
import pytest
from prometheus_client.parser import text_string_to_metric_families
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc import service_pb2_grpc as pb_grpc

from tests.support.serving import MODEL, DemoStore, direct, encoded, running_server

pytestmark = pytest.mark.slow
TOKEN = "grpc-servers-token"
AUTH = (("authorization", f"Bearer {TOKEN}"),)


def infer_request(x: np.ndarray, width: int | None = None) -> pb.ModelInferRequest:
    request = pb.ModelInferRequest(model_name=MODEL)
    request.inputs.add(name="features", datatype="FP32", shape=[len(x), width or x.shape[1]])
    request.raw_input_contents.append(x.astype("<f4").tobytes())
    return request


@pytest.mark.parametrize("threads", ["0", "4"], ids=["aio", "thread-pool"])
def test_each_grpc_server_scores_refuses_and_counts_alike(store: DemoStore, threads: str) -> None:
    flags = ("--grpc-threads", threads, "--auth-token", TOKEN)
    x = encoded(store, 3)
    with running_server(store, *flags, "--reload-interval-s", "0", "--no-request-log", grpc=True) as server:
        with grpc.insecure_channel(server.grpc_address) as channel:
            stub = pb_grpc.GRPCInferenceServiceStub(channel)  # type: ignore[no-untyped-call]
            assert stub.ServerLive(pb.ServerLiveRequest()).live  # open like REST's probe
            answer = stub.ModelInfer(infer_request(x), metadata=AUTH)
            got = np.frombuffer(answer.raw_output_contents[0], dtype="<f4")
            np.testing.assert_allclose(got, direct(store.onnx_a, x), rtol=1e-6)

            # More calls in flight than the pool has threads: each still gets its own answer.
            results: dict[int, np.ndarray] = {}

            def call(i: int) -> None:
                reply = stub.ModelInfer(infer_request(x[i % 3 : i % 3 + 1]), metadata=AUTH)
                results[i] = np.frombuffer(reply.raw_output_contents[0], dtype="<f4")

            callers = [threading.Thread(target=call, args=(i,)) for i in range(12)]
            for caller in callers:
                caller.start()
            for caller in callers:
                caller.join(30)
            assert sorted(results) == list(range(12))
            for i, value in results.items():
                np.testing.assert_allclose(value, got[i % 3 : i % 3 + 1], rtol=1e-6)

            with pytest.raises(grpc.RpcError) as unauthenticated:
                stub.ModelInfer(infer_request(x))
            assert unauthenticated.value.code() == grpc.StatusCode.UNAUTHENTICATED
            assert "missing bearer token" in str(unauthenticated.value.details())

            with pytest.raises(grpc.RpcError) as invalid:
                stub.ModelInfer(infer_request(x, width=x.shape[1] + 1), metadata=AUTH)
            assert invalid.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert f"has shape [3, {x.shape[1] + 1}]" in str(invalid.value.details())

        metrics = httpx.get(f"{server.url}/metrics", headers={"authorization": f"Bearer {TOKEN}"}).text
    counted = {
        sample.labels["code"]: sample.value
        for family in text_string_to_metric_families(metrics)
        for sample in family.samples
        if sample.name == "mlops_serving_requests_total" and sample.labels["protocol"] == "grpc"
    }
    assert counted == {"200": 13.0, "400": 1.0}, "13 answered, the bad shape refused (auth is counted apart)"
