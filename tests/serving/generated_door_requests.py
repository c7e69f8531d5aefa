"""The generators of tests/serving/test_generated_requests.py, one per door: V2 JSON (packed tensor), V2
binary tensors (packed), per-column V2 (JSON and binary tensors), V1 rows and gRPC (packed contents,
packed raw bytes, per-column raw bytes). Each builds a request from the model's contract and, half of the
time, breaks its structure (wrong shapes, datatypes, names, sizes, surplus or missing bytes, junk ids and
outputs), and gives the answer the rules say it must get (generated_request_rules.py).
"""

from __future__ import annotations

import json
import math
import struct
from typing import TYPE_CHECKING, Any

import numpy as np
from hypothesis import strategies as st

from tests.serving.generated_request_rules import (
    Case,
    Contract,
    admitted,
    broken,
    category_values,
    codes,
    column_matrix,
    fp32_overflows,
    frame_columns,
    numbers,
    packed_matrix,
    packed_rows,
)
from tests.support.serving import MODEL

if TYPE_CHECKING:
    # The gRPC door speaks through tritonclient's generated messages (the same inference.* protocol as
    # serving/proto): tests/serving/test_open_inference.py loads them, and one process cannot hold both sets.
    from tritonclient.grpc import service_pb2 as pb


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
