"""The request log keeps the subject key a request carries, so ``mlops forget`` finds the person's logged rows.

A model whose schema names a ``subject_key`` accepts that column beside its features (it is never an
input) in the per-column V2 form, V1's named rows and gRPC; the data plane hands its values to the request
log, which writes them as a column of that name. A packed ``features`` tensor cannot carry it: those rows
are logged with a null key. A model without a subject key logs no such column (test_request_log.py).
"""

from __future__ import annotations

import asyncio
import dataclasses
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from mlops.data.dataset import DatasetSchema
from mlops.data.features import FeatureSpec
from serving import protocol
from serving.app import create_plane
from serving.config import ServerConfig
from serving.dataplane import InferRequest
from serving.request_log_blocks import Block, decode_blocks, encode_blocks
from serving.request_log_table import to_table
from serving.runtime import LoadedModel
from tests.serving.test_model_router import local_model
from tests.support.serving import MODEL, DemoStore, encoded

pytestmark = pytest.mark.slow
KEY = "customer_id"


@dataclasses.dataclass
class Call:
    path_params: dict[str, str]
    headers: dict[str, str] = dataclasses.field(default_factory=dict)


@pytest.fixture(scope="module")
def model(store: DemoStore) -> LoadedModel:
    plain = local_model(store.onnx_a, "1")
    return dataclasses.replace(plain, spec=plain.spec.model_copy(update={"subject": KEY}))


def logged_after(model: LoadedModel, tmp_path: Path, inputs: list[Any]) -> pd.DataFrame:
    config = ServerConfig(
        tracking_uri="sqlite:///unused.db",
        request_log_uri=str(tmp_path),
        request_log_flush_s=60.0,
        reload_interval_s=0,
    )
    plane = create_plane(config, model)

    async def scenario() -> None:
        from serving.lifecycle import ServerLifecycle

        lifecycle = ServerLifecycle(config, plane, None, None)
        await lifecycle.start()
        try:
            for i, item in enumerate(inputs):
                await plane.infer(InferRequest(Call({"name": MODEL}), item, "v1", log_id=f"r{i}"))
        finally:
            await lifecycle.stop()

    asyncio.run(scenario())
    frame = pd.concat(pd.read_parquet(f) for f in (tmp_path / MODEL).glob("*.parquet"))
    return frame.sort_values(["request_id", "request_row"]).reset_index(drop=True)


def test_the_fitted_spec_names_the_schemas_subject_key_and_accepts_it_beside_the_features() -> None:
    frame = pd.DataFrame({"age": [1.0, 2.0], KEY: ["a", "b"], "y": [0, 1]})
    schema = DatasetSchema(label="y", numeric_features=("age",), ignored_columns=(KEY,), subject_key=KEY)
    spec = FeatureSpec.fit(frame, schema)
    assert spec.subject == KEY and KEY in spec.not_inputs and KEY not in spec.names
    assert FeatureSpec.fit(frame, schema.model_copy(update={"subject_key": ""})).subject == ""


def test_named_rows_and_columns_carry_the_key_into_the_log_and_a_packed_tensor_logs_none(
    store: DemoStore, model: LoadedModel, tmp_path: Path
) -> None:
    rows = store.holdout.iloc[:3]
    named = [
        {**{k: (None if v != v else v) for k, v in row.items() if k in model.spec.names}, KEY: f"C-{i}"}
        for i, row in enumerate(rows.to_dict(orient="records"))
    ]
    x = encoded(store, 2)
    v2_columns = {
        "inputs": [
            *(
                {"name": n, "datatype": "FP64", "shape": [2], "data": rows[n].iloc[:2].tolist()}
                for n in model.spec.numeric
            ),
            *(
                {"name": n, "datatype": "BYTES", "shape": [2], "data": rows[n].iloc[:2].tolist()}
                for n in model.spec.categorical
            ),
            {"name": KEY, "datatype": "INT64", "shape": [2], "data": [42, 7]},
        ]
    }
    packed = {
        "inputs": [
            {
                "name": "features",
                "shape": [2, x.shape[1]],
                "datatype": "FP32",
                "data": np.nan_to_num(x).ravel().tolist(),
            }
        ]
    }
    logged = logged_after(
        model,
        tmp_path,
        [protocol.V1Inputs({"instances": named}), protocol.V2Inputs(v2_columns), protocol.V2Inputs(packed)],
    )
    assert list(logged.columns[: len(model.spec.names) + 2]) == [*model.spec.names, KEY, "prediction"]
    assert [None if v is None or v != v else v for v in logged[KEY]] == [
        "C-0",
        "C-1",
        "C-2",
        "42",
        "7",
        None,
        None,
    ]
    assert logged["request_id"].tolist() == ["r0"] * 3 + ["r1"] * 2 + ["r2"] * 2


def test_v2_binary_and_grpc_inputs_give_the_key_as_text() -> None:
    ids = ["C-1", "Ünïcode"]
    raw = b"".join(struct.pack("<I", len(s.encode())) + s.encode() for s in ids)
    body = {
        "inputs": [
            {"name": "age", "datatype": "FP64", "shape": [2], "parameters": {"binary_data_size": 16}},
            {"name": KEY, "datatype": "BYTES", "shape": [2], "parameters": {"binary_data_size": len(raw)}},
        ]
    }
    binary = np.asarray([1.0, 2.0]).tobytes() + raw
    assert protocol.V2Inputs(body, binary).subjects(KEY) == ids
    assert protocol.V2Inputs(body, binary).subjects("other") is None
    assert grpc_subjects(ids) == [ids, ["3", "4"]]
    assert protocol.V1Inputs({"instances": [[1.0, 2.0]]}).subjects(KEY) is None


def grpc_subjects(ids: list[str]) -> Any:
    """What the gRPC face reads as subjects, in a fresh interpreter: protobuf refuses ``serving.proto`` in a
    process that already holds tritonclient's messages of the same names (other tests import them)."""
    import json
    import subprocess
    import sys

    code = f"""
import json
from serving.grpc_service import GrpcInputs
from serving.proto import grpc_predict_v2_pb2 as pb
request = pb.ModelInferRequest(model_name={MODEL!r})
tensor = request.inputs.add(name={KEY!r}, datatype="BYTES", shape=[2])
tensor.contents.bytes_contents.extend([s.encode() for s in {ids!r}])
number = request.inputs.add(name="age", datatype="INT64", shape=[2])
number.contents.int64_contents.extend([3, 4])
print(json.dumps([GrpcInputs(request).subjects({KEY!r}), GrpcInputs(request).subjects("age")]))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_key_survives_the_writer_pipe_and_a_request_without_it_is_logged_null(model: LoadedModel) -> None:
    block = Block("1", model.spec, 4)
    x = np.zeros((2, model.spec.n_features), dtype=np.float32)
    block.add(x, np.zeros(2, dtype=np.float32), 0, "a", subjects=["C-1", None])
    block.add(x[:1], np.zeros(1, dtype=np.float32), 0, "b")  # sent without the key
    block.add(x[:1], np.zeros(1, dtype=np.float32), 0, "c", subjects=["one", "too many"])
    (back,) = decode_blocks(encode_blocks([block]))
    assert to_table(back).column(KEY).to_pylist() == ["C-1", None, None, None]
    plain = Block("1", model.spec.model_copy(update={"subject": ""}), 2)
    plain.add(x[:1], np.zeros(1, dtype=np.float32), 0, "a", subjects=["C-1"])
    assert KEY not in to_table(plain).column_names and plain.subjects == []
    clashing = Block("1", model.spec.model_copy(update={"subject": "prediction"}), 1)
    with pytest.raises(ValueError, match=r"\['prediction'\] collide with request-log columns"):
        to_table(clashing)
