"""Generated requests at every door of a real server: never a 5xx, never a 200 with a wrong answer.

One ``mlops serve`` subprocess (REST and gRPC) serves the demo model for the whole module.
Each door has a generator that builds requests from the model's own contract — numbers
from the extremes a client can send (null/NaN, 0, huge, tiny, beyond FP32, infinite),
categorical codes and strings in and out of the vocabulary, the label and protected
columns a data row carries — and then, half of the time, breaks the request's structure
(wrong shapes, datatypes, names, sizes, surplus or missing bytes, junk ids and outputs).
Beside each request the generator computes the answer it must get, from the documented
rules alone (not from the server's code): either "refused" or the encoded matrix, which
ONNX Runtime scores directly. So every answer is checked both ways:

- a request the rules admit must be answered 200 with exactly ONNX Runtime's scores
  (rtol 1e-5: batching may mix it with nothing else here, the tolerance is for FP64 input);
- a request they refuse must get a 4xx (gRPC: INVALID_ARGUMENT) naming the problem;
- nothing ever gets a 5xx (gRPC: INTERNAL/UNKNOWN).

Doors: V2 JSON (packed tensor), V2 binary tensors (packed), per-column V2 (JSON and binary
tensors), gRPC (packed contents, packed raw bytes, per-column raw bytes) and V1 rows.
Besides these, junk bodies (random JSON values, random binary sections) must never get a
5xx. ``MLOPS_FUZZ_EXAMPLES`` sets the examples per door. CI runs 300 each (10-20 s per door on
the shared 2-core machine, ~50 ms per example: hypothesis drawing ~100 values, one HTTP or gRPC
round trip, one ONNX Runtime reference call); the issue's 10,000 per door is a hand run, with
pytest-timeout's 900 s per test lifted:
``MLOPS_FUZZ_EXAMPLES=10000 pytest -p no:xdist --timeout=0 tests/serving/test_generated_requests.py -k door``
(what was run, and its result, in serving/README.md). The per-column and V1 doors, first run at 2,000
each there, have since run 10,000 each too (``-k "test_per_column_door or test_v1_door"``, one run, the
shared 2-core machine beside other jobs): 0 failures, 837 s for the two; so every door has run 10,000.
"""

from __future__ import annotations

import json
import math
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import grpc
import httpx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlops.data.features import FeatureSpec
from mlops.model.onnx_model import OnnxScorer
from tests.support.serving import MODEL, DemoStore, ServerProcess, free_port, running_server

if TYPE_CHECKING:
    # The gRPC door speaks through tritonclient's generated messages (the same inference.* protocol as
    # serving/proto): tests/serving/test_open_inference.py loads them, and one process cannot hold both sets.
    from tritonclient.grpc import service_pb2 as pb

pytestmark = pytest.mark.slow
EXAMPLES = int(os.environ.get("MLOPS_FUZZ_EXAMPLES", "300"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    database=None,
)
JUNK = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
FP32_MAX = float(np.finfo(np.float32).max)
INFER = f"/v2/models/{MODEL}/infer"
PREDICT = f"/v1/models/{MODEL}:predict"


@dataclass(frozen=True)
class Contract:
    """What the generators know of the model: its spec, read from the ONNX file like any client could."""

    spec: FeatureSpec

    @property
    def width(self) -> int:
        return self.spec.n_features

    @property
    def offset(self) -> int:
        return len(self.spec.numeric)


@dataclass
class Case:
    """A generated request and what it must get: ``matrix`` (to score) or None (must be refused)."""

    matrix: np.ndarray | None
    body: Any = None
    headers: dict[str, str] | None = None
    why: str = ""
    """What the generator broke, for the failure message."""


# ---- values ---------------------------------------------------------------------------------------

numbers = st.one_of(
    st.none(),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False),
    st.integers(min_value=-(2**31), max_value=2**31),
    st.sampled_from([0, 1, -1, 0.5, 1e-45, 5e-324, 3.4e38, 3.5e38, -3.5e38, 1e300, FP32_MAX]),
)
"""Numbers a JSON client can send (null = missing)."""


def codes(top: int) -> st.SearchStrategy[Any]:
    """Categorical codes: mostly valid (0..top, null), some not (-1, top + 1, fractions, huge)."""
    return st.one_of(
        st.integers(min_value=0, max_value=top),
        st.none(),
        st.sampled_from([-1, top + 1, 0.5, top + 0.25, 1e30, -7]),
    )


def admitted(value: Any) -> float:
    """A JSON number as the model's FP32 sees it (NaN = missing), or inf when FP32 cannot hold it."""
    if value is None:
        return math.nan
    with np.errstate(over="ignore"):
        return float(np.float32(value))


def packed_matrix(c: Contract, rows: list[list[Any]]) -> np.ndarray | None:
    """The rules for a packed tensor: numbers finite in FP32 or missing, codes integers 0..K or missing (0)."""
    x = np.array([[admitted(v) for v in row] for row in rows], dtype=np.float64).reshape(len(rows), c.width)
    if np.isinf(x).any():
        return None
    cat = x[:, c.offset :]
    tops = np.array([len(v) for v in c.spec.vocabularies], dtype=np.float64)
    present = ~np.isnan(cat)
    if ((cat < 0) | (cat > tops) | (cat != np.floor(cat)))[present].any():
        return None
    cat[~present] = 0
    return x.astype(np.float32)


@st.composite
def packed_rows(draw: st.DrawFn, c: Contract) -> list[list[Any]]:
    n = draw(st.integers(min_value=0, max_value=4))
    tops = [len(v) for v in c.spec.vocabularies]
    return [[draw(numbers) for _ in c.spec.numeric] + [draw(codes(top)) for top in tops] for _ in range(n)]


def broken(draw: st.DrawFn, options: list[tuple[str, Any]]) -> tuple[str, Any] | None:
    """Half of the time, one of ``options`` (a structural break the request must be refused for)."""
    flip: bool = draw(st.booleans())
    if options and flip:
        chosen: tuple[str, Any] = draw(st.sampled_from(options))
        return chosen
    return None


# ---- V2 JSON, packed -------------------------------------------------------------------------------


@st.composite
def v2_json_cases(draw: st.DrawFn, c: Contract) -> Case:
    rows = draw(packed_rows(c))
    datatype = draw(st.sampled_from(["FP32", "FP64"]))
    nested = draw(st.booleans())
    data: Any = rows if nested else [v for row in rows for v in row]
    tensor: dict[str, Any] = {
        "name": "features",
        "datatype": datatype,
        "shape": [len(rows), c.width],
        "data": data,
    }
    body: dict[str, Any] = {"inputs": [tensor]}
    if draw(st.booleans()):
        body["id"] = draw(st.text(max_size=8) | st.integers(min_value=0, max_value=10**6))
    if draw(st.booleans()):
        body["outputs"] = [{"name": "probability"}]
    if draw(st.booleans()):
        body["parameters"] = {"content_type": "np"}
    matrix = packed_matrix(c, rows) if rows else np.empty((0, c.width), dtype=np.float32)
    brk = broken(
        draw,
        [
            ("name", ("name", "x")),
            ("datatype", ("datatype", draw(st.sampled_from(["INT64", "BYTES", "FP16", None, 3])))),
            ("shape", ("shape", [len(rows), c.width - 1])),
            ("shape", ("shape", [len(rows) + 1, c.width])),
            ("shape", ("shape", [len(rows) * c.width])),
            ("data", ("data", [*data, 1.0] if data else [1.0])),
            ("data", ("data", "not a list")),
            ("outputs", ("outputs", [{"name": "logit"}])),
            ("extra-input", None),
        ],
    )
    if brk is None:
        return Case(matrix, body)
    what, change = brk
    if change is None:
        body["inputs"].append({"name": "extra", "datatype": "FP32", "shape": [1], "data": [1.0]})
    elif what == "outputs":
        body["outputs"] = change[1]
    else:
        tensor[change[0]] = change[1]
    return Case(None, body, why=what)


# ---- V2 binary, packed -----------------------------------------------------------------------------


@st.composite
def binary_cases(draw: st.DrawFn, c: Contract) -> Case:
    n = draw(st.integers(min_value=0, max_value=4))
    datatype = draw(st.sampled_from(["FP32", "FP64"]))
    dtype = np.dtype("<f4" if datatype == "FP32" else "<f8")
    tops = [len(v) for v in c.spec.vocabularies]
    floats = st.floats(width=32 if datatype == "FP32" else 64) | st.sampled_from(
        [0.0, 1.0, 3.5e38, 1e300, -0.0]
    )
    rows = [
        [draw(floats) for _ in c.spec.numeric] + [float(draw(codes(top)) or 0) for top in tops]
        for _ in range(n)
    ]
    raw = np.asarray(rows, dtype=np.float64).reshape(n, c.width).astype(dtype).tobytes()
    values = np.frombuffer(raw, dtype=dtype).reshape(n, c.width)
    as_json = [
        [None if math.isnan(v) else (math.inf if math.isinf(v) else v) for v in row]
        for row in values.tolist()
    ]
    matrix = packed_matrix(c, as_json) if n else np.empty((0, c.width), dtype=np.float32)
    header_of = lambda size: json.dumps(  # noqa: E731
        {
            "inputs": [
                {
                    "name": "features",
                    "shape": [n, c.width],
                    "datatype": datatype,
                    "parameters": {"binary_data_size": size},
                }
            ],
            "outputs": [{"name": "probability", "parameters": {"binary_data": draw(st.booleans())}}],
        }
    ).encode()
    header = header_of(len(raw))
    brk = broken(
        draw, [("surplus", 0), ("short", 0), ("declared", 0), ("header-length", 0), ("no-header", 0)]
    )
    length = str(len(header))
    if brk is not None:
        what = brk[0]
        if what == "surplus":
            raw += draw(st.binary(min_size=1, max_size=9))
        elif what == "short":
            if not raw:
                raw, header = b"", header_of(4)
            else:
                raw = raw[: draw(st.integers(min_value=0, max_value=len(raw) - 1))]
        elif what == "declared":
            header = header_of(len(raw) + draw(st.sampled_from([1, 4, -1 if raw else 3])))
            length = str(len(header))
        elif what == "header-length":
            length = draw(st.sampled_from([str(len(header) + 2), "-1", "abc", "99999999", "+1", ""]))
        elif raw:  # no Inference-Header-Content-Length: the bytes after the JSON make it invalid JSON
            return Case(None, header + raw, {}, why=what)
        else:  # ... unless there are none: a plain JSON body declaring 0 bytes, which is valid
            return Case(matrix, header, {})
        return Case(None, header + raw, {"Inference-Header-Content-Length": length}, why=what)
    return Case(matrix, header + raw, {"Inference-Header-Content-Length": length})


# ---- per column (REST JSON and binary) ---------------------------------------------------------


def category_values(vocabulary: tuple[str, ...]) -> st.SearchStrategy[str | None]:
    return st.sampled_from(vocabulary) | st.none() | st.text(max_size=6) | st.sampled_from(["", "NORTH", "é"])


@st.composite
def frame_columns(draw: st.DrawFn, c: Contract) -> tuple[int, dict[str, tuple[str, list[Any]]]]:
    """Columns of a data table (name -> (datatype, values)); label and protected columns sometimes."""
    n = draw(st.integers(min_value=0, max_value=4))
    columns: dict[str, tuple[str, list[Any]]] = {}
    for name in c.spec.numeric:
        if draw(st.integers(min_value=0, max_value=4)) == 0:
            columns[name] = (draw(st.sampled_from(["INT64", "INT32"])),
                             draw(st.lists(st.integers(-(2**31), 2**31 - 1) | st.none(), min_size=n, max_size=n)))  # fmt: skip
        else:
            columns[name] = (
                draw(st.sampled_from(["FP32", "FP64"])),
                draw(st.lists(numbers, min_size=n, max_size=n)),
            )
    for name, vocabulary in zip(c.spec.categorical, c.spec.vocabularies, strict=True):
        columns[name] = ("BYTES", draw(st.lists(category_values(vocabulary), min_size=n, max_size=n)))
    for name in sorted(c.spec.not_inputs):
        if draw(st.booleans()):
            columns[name] = ("BYTES", draw(st.lists(st.text(max_size=3), min_size=n, max_size=n)))
    return n, columns


def column_matrix(c: Contract, n: int, columns: dict[str, tuple[str, list[Any]]]) -> np.ndarray | None:
    """The rules for per-column inputs: numbers finite in FP32 (or missing), strings looked up in the
    vocabulary (missing or unseen: code 0) — FeatureSpec.encode's mapping."""
    x = np.zeros((n, c.width), dtype=np.float64)
    for i, name in enumerate(c.spec.numeric):
        _, values = columns[name]
        x[:, i] = [
            admitted(v) for v in values
        ]  # FP32 or FP64, JSON or binary: what FP32 cannot hold is refused
    if np.isinf(x).any():
        return None
    for j, (name, vocabulary) in enumerate(zip(c.spec.categorical, c.spec.vocabularies, strict=True)):
        index = {v: k + 1 for k, v in enumerate(vocabulary)}
        x[:, c.offset + j] = [0 if v is None else index.get(v, 0) for v in columns[name][1]]
    return x.astype(np.float32)


def fp32_overflows(value: Any) -> bool:
    with np.errstate(over="ignore"):
        return value is not None and bool(np.isinf(np.float32(value)))


@st.composite
def column_cases(draw: st.DrawFn, c: Contract, binary: bool) -> Case:
    n, columns = draw(frame_columns(c))
    # binary numbers cannot carry null: NaN instead (missing), and what FP32 cannot hold overflows on the client
    if binary:
        for name, (datatype, values) in list(columns.items()):
            if datatype == "BYTES":
                columns[name] = (datatype, ["" if v is None else v for v in values])
            elif datatype.startswith("FP"):
                columns[name] = (datatype, [math.nan if v is None else float(v) for v in values])
            else:
                columns[name] = (datatype, [0 if v is None else v for v in values])
    matrix = column_matrix(c, n, {k: (d, [None if isinstance(v, float) and math.isnan(v) else v for v in vals])
                                  for k, (d, vals) in columns.items()})  # fmt: skip
    order = draw(st.permutations(list(columns)))
    brk = broken(
        draw,
        [
            ("unknown", 0),
            ("missing", 0),
            ("numbers-as-bytes", 0),
            ("rows", 0),
            ("duplicate", 0),
            ("datatype", 0),
        ],
    )
    what = brk[0] if brk else ""
    shape_of = lambda: [n, 1] if draw(st.booleans()) else [n]  # noqa: E731
    specs: list[tuple[str, str, list[int], list[Any]]] = [
        (name, columns[name][0], shape_of(), columns[name][1]) for name in order
    ]
    numeric = c.spec.numeric[0]
    if what == "unknown":
        specs.append(("favourite_colour", "BYTES", [n], ["x"] * n))
    elif what == "missing":
        specs = [s for s in specs if s[0] != c.spec.categorical[-1]]
    elif what == "numbers-as-bytes":
        specs = [(s[0], "BYTES", s[2], ["1"] * n) if s[0] == numeric else s for s in specs]
    elif what == "rows":
        specs = [
            (s[0], s[1], [n + 1], s[3] + s[3][:1] if s[3] else ["a"]) if s[0] == numeric else s for s in specs
        ]
        specs = [(s[0], "FP64", s[2], [1.0] * (n + 1)) if s[0] == numeric else s for s in specs]
    elif what == "duplicate":
        specs.append(next(s for s in specs if s[0] == numeric))
    elif what == "datatype":
        specs = [(s[0], "BOOL", s[2], s[3]) if s[0] == numeric else s for s in specs]
    if binary:
        raw, headers = binary_columns(specs)
        return Case(None if what else matrix, raw, headers, why=what)
    body = {"parameters": {"content_type": "pd"}, "inputs": [
        {"name": name, "datatype": datatype, "shape": shape, "data": values,
         **({"parameters": {"content_type": "str"}} if datatype == "BYTES" else {})}
        for name, datatype, shape, values in specs
    ]}  # fmt: skip
    return Case(None if what else matrix, body, why=what)


def binary_columns(specs: list[tuple[str, str, list[int], list[Any]]]) -> tuple[bytes, dict[str, str]]:
    inputs, chunks = [], []
    for name, datatype, shape, values in specs:
        if datatype == "BYTES":
            raw = b"".join(struct.pack("<I", len(v.encode())) + v.encode() for v in map(str, values))
        elif datatype == "BOOL":
            raw = bytes(len(values))
        else:
            dtype = {"FP32": "<f4", "FP64": "<f8", "INT64": "<i8", "INT32": "<i4"}[datatype]
            with np.errstate(over="ignore", invalid="ignore"):
                raw = (
                    np.asarray(values, dtype=np.float64 if datatype.startswith("FP") else np.int64)
                    .astype(dtype)
                    .tobytes()
                )
        chunks.append(raw)
        inputs.append(
            {"name": name, "datatype": datatype, "shape": shape, "parameters": {"binary_data_size": len(raw)}}
        )
    header = json.dumps({"inputs": inputs}).encode()
    return header + b"".join(chunks), {"Inference-Header-Content-Length": str(len(header))}


# ---- V1 rows -----------------------------------------------------------------------------------


@st.composite
def v1_cases(draw: st.DrawFn, c: Contract) -> Case:
    n = draw(st.integers(min_value=1, max_value=3))
    rows = []
    for _ in range(n):
        row: dict[str, Any] = {name: draw(numbers) for name in c.spec.numeric}
        for name, vocabulary in zip(c.spec.categorical, c.spec.vocabularies, strict=True):
            row[name] = draw(category_values(vocabulary) | st.integers(-3, 3))
        for name in sorted(c.spec.not_inputs):
            if draw(st.booleans()):
                row[name] = draw(st.text(max_size=3) | st.integers(0, 1) | st.none())
        rows.append(dict(draw(st.permutations(list(row.items())))))
    x = np.zeros((n, c.width), dtype=np.float64)
    for r, row in enumerate(rows):
        x[r, : c.offset] = [admitted(row[name]) for name in c.spec.numeric]
        for j, (name, vocabulary) in enumerate(zip(c.spec.categorical, c.spec.vocabularies, strict=True)):
            value = row[name]
            x[r, c.offset + j] = (
                0 if value is None else {v: k + 1 for k, v in enumerate(vocabulary)}.get(str(value), 0)
            )
    matrix = None if np.isinf(x).any() else x.astype(np.float32)
    brk = broken(
        draw, [("unknown", 0), ("missing", 0), ("string-number", 0), ("bool-number", 0), ("not-a-list", 0)]
    )
    what = brk[0] if brk else ""
    numeric = c.spec.numeric[-1]
    if what == "unknown":
        rows[0]["favourite_colour"] = "red"
    elif what == "missing":
        del rows[-1][c.spec.categorical[0]]
    elif what == "string-number":
        rows[0][numeric] = draw(st.sampled_from(["41", "abc", ""]))
    elif what == "bool-number":
        rows[0][numeric] = True
    elif what == "not-a-list":
        return Case(None, {"instances": rows[0]}, why=what)
    return Case(None if what else matrix, {"instances": rows}, why=what)


# ---- gRPC --------------------------------------------------------------------------------------


@st.composite
def grpc_cases(draw: st.DrawFn, c: Contract) -> tuple[Case, pb.ModelInferRequest]:
    from tritonclient.grpc import service_pb2 as pb

    form = draw(st.sampled_from(["contents", "raw", "columns"]))
    if form == "columns":
        n, columns = draw(frame_columns(c))
        request = pb.ModelInferRequest(model_name=MODEL)
        for name in draw(st.permutations(list(columns))):
            datatype, values = columns[name]
            request.inputs.add(name=name, datatype=datatype, shape=[n, 1])
            if datatype == "BYTES":
                request.raw_input_contents.append(
                    b"".join(
                        struct.pack("<I", len(v.encode())) + v.encode()
                        for v in ("" if v is None else v for v in values)
                    )
                )
                columns[name] = (datatype, ["" if v is None else v for v in values])
            else:
                dtype = {"FP32": "<f4", "FP64": "<f8", "INT64": "<i8", "INT32": "<i4"}[datatype]
                filled = (
                    [math.nan if v is None else v for v in values]
                    if datatype.startswith("FP")
                    else [0 if v is None else v for v in values]
                )
                with np.errstate(over="ignore"):
                    request.raw_input_contents.append(
                        np.asarray(filled, dtype=np.float64 if datatype.startswith("FP") else np.int64)
                        .astype(dtype)
                        .tobytes()
                    )
                columns[name] = (
                    datatype,
                    [None if isinstance(v, float) and math.isnan(v) else v for v in filled],
                )
        fp32_bad = any(fp32_overflows(v) for d, vals in columns.values() if d == "FP32" for v in vals)
        matrix = None if fp32_bad else column_matrix(c, n, columns)
        if draw(st.booleans()):
            request.raw_input_contents.append(b"\x00" * draw(st.integers(0, 8)))  # an entry with no input
            return Case(None, why="extra-raw-entry"), request
        return Case(matrix), request
    rows = draw(packed_rows(c))
    n = len(rows)
    datatype = draw(st.sampled_from(["FP32", "FP64"]))
    request = pb.ModelInferRequest(model_name=MODEL, id=draw(st.text(max_size=5)))
    tensor = request.inputs.add(name="features", datatype=datatype, shape=[n, c.width])
    flat = [math.nan if v is None else float(v) for row in rows for v in row]
    if datatype == "FP32":  # the client's FP32: what does not fit overflows to inf before it is sent
        with np.errstate(over="ignore"):
            flat = np.asarray(flat, dtype=np.float64).astype(np.float32).tolist()
    if form == "raw":
        request.raw_input_contents.append(
            np.asarray(flat, dtype="<f4" if datatype == "FP32" else "<f8").tobytes()
        )
    elif datatype == "FP32":
        tensor.contents.fp32_contents.extend(flat)
    else:
        tensor.contents.fp64_contents.extend(flat)
    as_json = [
        [None if math.isnan(v) else v for v in flat[r * c.width : (r + 1) * c.width]] for r in range(n)
    ]
    matrix = packed_matrix(c, as_json) if n else np.empty((0, c.width), dtype=np.float32)
    brk = broken(draw, [("shape", 0), ("surplus", 0), ("name", 0), ("datatype", 0)])
    what = brk[0] if brk else ""
    if what == "shape":
        tensor.shape[1] = c.width + 1
    elif what == "surplus":
        if form == "raw":
            request.raw_input_contents[0] += b"\x00" * draw(st.integers(1, 7))
        elif datatype == "FP64":
            tensor.contents.fp64_contents.append(1.0)
        else:
            tensor.contents.fp32_contents.append(1.0)
    elif what == "name":
        tensor.name = "x"
    elif what == "datatype":
        tensor.datatype = "INT64"
    return Case(None if what else matrix, why=what), request


# ---- the module's server and the checks -----------------------------------------------------------


class Doors:
    """The module's server, its clients and the model contract (a plain class: hypothesis prints it short)."""

    def __init__(
        self, server: ServerProcess, http: httpx.Client, grpc: Any, contract: Contract, store: DemoStore
    ):
        self.server, self.http, self.grpc, self.contract, self.store = server, http, grpc, contract, store
        self.scorer = OnnxScorer.load(store.onnx_a / "model.onnx")
        """ONNX Runtime on the model file, opened once: the reference every answer is compared with."""

    def __repr__(self) -> str:
        return f"Doors({self.server.url})"


@pytest.fixture(scope="module")
def doors(store: DemoStore) -> Iterator[Doors]:
    grpc_port = free_port()
    flags = ("--no-request-log", "--reload-interval-s", "0", "--grpc-port", str(grpc_port))
    with (
        running_server(store, *flags) as server,
        httpx.Client(base_url=server.url, timeout=10) as client,
        grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as channel,
    ):
        spec = OnnxScorer.load(store.onnx_a / "model.onnx").spec
        from tritonclient.grpc import service_pb2_grpc as pb_grpc

        yield Doors(server, client, pb_grpc.GRPCInferenceServiceStub(channel), Contract(spec), store)


def expected_scores(doors: Doors, case: Case) -> np.ndarray | None:
    """ONNX Runtime's scores of the admitted matrix; None when the rules refuse the request, or when the
    model itself gives a non-finite probability (values far outside training: refused, documented)."""
    if case.matrix is None:
        return None
    if not len(case.matrix):
        return np.empty(0, np.float32)
    scores = doors.scorer.predict_encoded(case.matrix)
    return scores if np.isfinite(scores).all() else None


def check_rest(doors: Doors, case: Case, response: httpx.Response, key: str = "outputs") -> None:
    assert response.status_code < 500, f"{case.why}: {response.status_code} {response.text}"
    expected = expected_scores(doors, case)
    if expected is None:
        assert 400 <= response.status_code < 500, (
            f"must be refused ({case.why or 'a value the rules refuse'})"
        )
        assert response.json()["error"], "every refusal explains itself"
        return
    assert response.status_code == 200, f"admitted by the rules, refused: {response.text}"
    body = response.content
    cut = int(response.headers.get("inference-header-content-length", len(body)))
    answer = json.loads(body[:cut])
    if key == "predictions":
        scores = np.asarray(answer["predictions"], dtype=np.float32)
    elif "data" in answer["outputs"][0]:
        scores = np.asarray(answer["outputs"][0]["data"], dtype=np.float32)
    else:
        scores = np.frombuffer(body[cut:], dtype="<f4")
    assert scores.shape == expected.shape
    np.testing.assert_allclose(scores, expected, rtol=1e-5, atol=1e-6)


@SETTINGS
@given(data=st.data())
def test_v2_json_door(doors: Doors, data: st.DataObject) -> None:
    case = data.draw(v2_json_cases(doors.contract))
    check_rest(doors, case, doors.http.post(INFER, content=json.dumps(case.body).encode()))


@SETTINGS
@given(data=st.data())
def test_binary_tensor_door(doors: Doors, data: st.DataObject) -> None:
    case = data.draw(binary_cases(doors.contract))
    check_rest(doors, case, doors.http.post(INFER, content=case.body, headers=case.headers))


@SETTINGS
@given(data=st.data())
def test_per_column_door(doors: Doors, data: st.DataObject) -> None:
    case = data.draw(column_cases(doors.contract, binary=data.draw(st.booleans())))
    body = case.body if isinstance(case.body, bytes) else json.dumps(case.body).encode()
    check_rest(doors, case, doors.http.post(INFER, content=body, headers=case.headers or {}))


@SETTINGS
@given(data=st.data())
def test_v1_door(doors: Doors, data: st.DataObject) -> None:
    case = data.draw(v1_cases(doors.contract))
    check_rest(doors, case, doors.http.post(PREDICT, content=json.dumps(case.body).encode()), "predictions")


@SETTINGS
@given(data=st.data())
def test_grpc_door(doors: Doors, data: st.DataObject) -> None:
    case, request = data.draw(grpc_cases(doors.contract))
    expected = expected_scores(doors, case)
    try:
        response = doors.grpc.ModelInfer(request, timeout=10)
    except grpc.RpcError as exc:
        assert exc.code() == grpc.StatusCode.INVALID_ARGUMENT, f"{case.why}: {exc.code()} {exc.details()}"
        assert expected is None, f"admitted by the rules, refused: {exc.details()}"
        return
    assert expected is not None, f"must be refused ({case.why or 'a value the rules refuse'})"
    if response.raw_output_contents:
        scores = np.frombuffer(response.raw_output_contents[0], dtype="<f4")
    else:
        scores = np.asarray(response.outputs[0].contents.fp32_contents, dtype=np.float32)
    assert scores.shape == expected.shape
    np.testing.assert_allclose(scores, expected, rtol=1e-5, atol=1e-6)


# ---- junk: anything at all, never a 5xx -------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | numbers | st.integers() | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=12,
)


@JUNK
@given(inputs=st.lists(json_values | st.fixed_dictionaries({"name": st.sampled_from(["features", "age", "region", "sex", "x"]), "datatype": json_values, "shape": json_values, "data": json_values}), max_size=3), top=st.dictionaries(st.sampled_from(["id", "outputs", "parameters"]), json_values, max_size=3))  # fmt: skip
def test_junk_v2_bodies_never_get_a_5xx(doors: Doors, inputs: list[Any], top: dict[str, Any]) -> None:
    response = doors.http.post(INFER, content=json.dumps({"inputs": inputs, **top}).encode())
    assert response.status_code < 500, response.text


@JUNK
@given(header=json_values, tail=st.binary(max_size=64), length=st.integers(-2, 400) | st.text(max_size=3))
def test_junk_binary_bodies_never_get_a_5xx(doors: Doors, header: Any, tail: bytes, length: Any) -> None:
    head = json.dumps(
        {
            "inputs": [
                {
                    "name": "region",
                    "datatype": "BYTES",
                    "shape": [2],
                    "parameters": {"binary_data_size": header},
                }
            ]
        }
    ).encode()
    try:
        response = doors.http.post(
            INFER, content=head + tail, headers={b"Inference-Header-Content-Length": str(length).encode()}
        )
    except httpx.LocalProtocolError:  # a header value httpx itself will not send
        return
    assert response.status_code < 500, response.text
