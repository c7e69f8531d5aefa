"""Reasons over gRPC: ``parameters["explain"]`` (bool_param) adds a BYTES output ``reasons``, typed or raw,
holding what REST's ``:explain`` answers for the same rows. Driven with tritonclient's messages, in a
process that never imports ``serving.proto`` (protobuf refuses both)."""

from __future__ import annotations

import json

import grpc
import httpx
import numpy as np
import pytest
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc import service_pb2_grpc as pb_grpc

from mlops.data.sample_data import SAMPLE_SCHEMA
from tests.support.serving import MODEL, DemoStore, encoded, running_server

pytestmark = pytest.mark.slow


def request(x: np.ndarray, raw: bool, explain: pb.InferParameter | None) -> pb.ModelInferRequest:
    message = pb.ModelInferRequest(model_name=MODEL)
    tensor = message.inputs.add(name="features", datatype="FP32", shape=list(x.shape))
    if raw:
        message.raw_input_contents.append(x.astype("<f4").tobytes())
    else:
        tensor.contents.fp32_contents.extend(x.ravel().tolist())
    if explain is not None:
        message.parameters["explain"].CopyFrom(explain)
    return message


def raw_bytes(data: bytes) -> list[bytes]:
    out, at = [], 0
    while at < len(data):
        size = int.from_bytes(data[at : at + 4], "little")
        out.append(data[at + 4 : at + 4 + size])
        at += 4 + size
    return out


def test_grpc_explain_answers_the_rest_reasons_typed_and_raw(store: DemoStore) -> None:
    x = encoded(store, 2)
    frame = store.holdout.iloc[:2][list(SAMPLE_SCHEMA.features)]
    instances = [{k: (None if v != v else v) for k, v in row.items()} for row in frame.to_dict("records")]
    with running_server(store, "--no-request-log", "--reload-interval-s", "0", grpc=True) as server:
        rest = httpx.post(
            f"{server.url}/v1/models/{MODEL}:explain", json={"instances": instances}, timeout=30
        )
        expected = [row["reasons"] for row in rest.json()["explanations"]]
        with grpc.insecure_channel(server.grpc_address) as channel:
            stub = pb_grpc.GRPCInferenceServiceStub(channel)  # type: ignore[no-untyped-call]
            typed = stub.ModelInfer(request(x, False, pb.InferParameter(bool_param=True)))
            assert [o.name for o in typed.outputs] == ["probability", "reasons"]
            assert [json.loads(t) for t in typed.outputs[1].contents.bytes_contents] == expected

            raw = stub.ModelInfer(request(x, True, pb.InferParameter(bool_param=True)))
            assert (raw.outputs[1].datatype, list(raw.outputs[1].shape)) == ("BYTES", [2])
            assert [json.loads(t) for t in raw_bytes(raw.raw_output_contents[1])] == expected

            plain = stub.ModelInfer(request(x, True, None))
            assert [o.name for o in plain.outputs] == ["probability"]
            with pytest.raises(grpc.RpcError) as refused:
                stub.ModelInfer(request(x, True, pb.InferParameter(string_param="yes")))
            assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "parameters.explain" in (refused.value.details() or "")
