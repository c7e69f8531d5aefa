"""Request parsing and response building for the KServe V2 (Open Inference) and V1 REST protocols.

Every malformed request ends here as a :class:`ProtocolError` carrying the HTTP
status and a message that names the bad value and the expected form, so a client
can fix its request from the error alone. JSON has no NaN: a ``null`` inside a
tensor stands for a missing value, which the model imputes like training did.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson

from mlops.model.onnx_model import INPUT_NAME, OUTPUT_NAME
from serving.errors import ProtocolError
from serving.tensors import DTYPES, FeatureBounds, binary_size, from_binary

if TYPE_CHECKING:
    from mlops.data.features import FeatureSpec

__all__ = ["ProtocolError"]  # raised by every parser here; defined in serving.errors

V2_DATATYPES = tuple(DTYPES)
PLATFORM = "onnxruntime_onnx"


def decode_json(body: bytes) -> Any:
    if not body:
        raise ProtocolError(400, "request body is empty; send a JSON object")
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        hint = ""
        if b"NaN" in body or b"Infinity" in body:
            hint = "; NaN and Infinity are not JSON: send null for a missing value (or use binary data)"
        raise ProtocolError(400, f"request body is not valid JSON: {exc}{hint}") from exc


def _numbers_or_nulls(data: Any, where: str) -> np.ndarray:
    """The slow path for tensors holding ``null`` or mixed values: check every element."""
    flat: list[Any] = []
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(reversed(item))
        elif item is None:
            flat.append(math.nan)
        elif isinstance(item, bool) or not isinstance(item, int | float):
            raise ProtocolError(
                400, f"{where} holds {item!r}; only numbers (or null for missing) are accepted"
            )
        else:
            flat.append(item)
    return np.asarray(flat, dtype=np.float64)


def to_matrix(data: Any, rows: int, width: int, where: str) -> np.ndarray:
    """``data`` (flat or nested list of numbers, ``null`` = missing) as a [rows, width] array, unconverted."""
    if not isinstance(data, list):
        raise ProtocolError(400, f"{where} must be a list of numbers, got {type(data).__name__}")
    try:
        array = np.asarray(data)
    except (ValueError, OverflowError) as exc:  # ragged nesting; an integer beyond 64 bits
        raise ProtocolError(
            400, f"{where} is ragged or out of range ({exc}); every row must have {width} numbers"
        ) from exc
    if array.dtype.kind == "O":
        if array.ndim > 1 and array.shape[-1] != width:
            raise ProtocolError(400, f"{where} rows have {array.shape[-1]} values; this model takes {width}")
        flat = _numbers_or_nulls(data, where)
        if flat.size != rows * width:
            raise ProtocolError(
                400, f"{where} holds {flat.size} values; shape [{rows}, {width}] needs {rows * width}"
            )
        return flat.reshape(rows, width)
    if array.dtype.kind not in "fiu":
        kind = "strings" if array.dtype.kind in "US" else f"{array.dtype} values"
        raise ProtocolError(400, f"{where} holds {kind}; only numbers (or null for missing) are accepted")
    if array.shape not in ((rows * width,), (rows, width)):
        raise ProtocolError(
            400,
            f"{where} has shape {list(array.shape)}; expected [{rows}, {width}] or a flat list of "
            f"{rows * width} values",
        )
    return array.reshape(rows, width)


@dataclass(frozen=True)
class V2Request:
    """A parsed V2 inference request: the admitted matrix, the id to echo, how to send the output."""

    x: np.ndarray
    request_id: str | int | None
    binary_output: bool


def parse_v2_infer(payload: Any, bounds: FeatureBounds, binary: bytes = b"") -> V2Request:
    """The ``features`` tensor of a V2 request (JSON ``data`` or, with the binary extension, raw bytes)."""
    width = len(bounds.names)
    expected = f"this model takes one input {INPUT_NAME!r} of datatype FP32 or FP64 and shape [N, {width}]"
    if not isinstance(payload, dict):
        raise ProtocolError(400, f"a V2 inference request is a JSON object with 'inputs'; {expected}")
    inputs = payload.get("inputs")
    if not isinstance(inputs, list) or not inputs:
        raise ProtocolError(400, f"request has no 'inputs' list; {expected}")
    names = [item.get("name") if isinstance(item, dict) else None for item in inputs]
    if INPUT_NAME not in names:
        raise ProtocolError(400, f"missing input {INPUT_NAME!r} (got {names}); {expected}")
    if len(inputs) > 1:
        extra = [n for n in names if n != INPUT_NAME]
        raise ProtocolError(400, f"unexpected input(s) {extra}; {expected}")
    tensor = inputs[0]
    datatype = tensor.get("datatype")
    if datatype not in V2_DATATYPES:
        raise ProtocolError(
            400,
            f"input {INPUT_NAME!r} has datatype {datatype!r}; accepted datatypes are {list(V2_DATATYPES)}",
        )
    shape = tensor.get("shape")
    if (
        not isinstance(shape, list)
        or len(shape) != 2
        or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)
        or shape[1] != width
    ):
        raise ProtocolError(400, f"input {INPUT_NAME!r} has shape {shape!r}; {expected}")
    where = f"input {INPUT_NAME!r}"
    size = binary_size(tensor.get("parameters"), where)
    if size is not None:
        if "data" in tensor:
            raise ProtocolError(400, f"{where} has both 'data' and binary_data_size; send one of them")
        if size != len(binary):
            raise ProtocolError(
                400,
                f"{where} declares binary_data_size {size} but {len(binary)} bytes follow the JSON header "
                "(Inference-Header-Content-Length)",
            )
        values = from_binary(binary, datatype, shape[0], width, where)
    elif "data" not in tensor:
        raise ProtocolError(400, f"{where} has no 'data' (nor binary_data_size); {expected}")
    elif binary:
        raise ProtocolError(
            400,
            f"{len(binary)} bytes of binary data follow the JSON header but no input declares binary_data_size",
        )
    else:
        values = to_matrix(tensor["data"], shape[0], width, f"{where} data")
    binary_output = _binary_output(payload)
    request_id = payload.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, str | int):
        request_id = None
    return V2Request(bounds.admit(values, where), request_id, binary_output)


def _binary_output(payload: dict[str, Any]) -> bool:
    """Whether the client asked for the output as binary data (per output, else for the whole request)."""
    parameters = payload.get("parameters")
    default = bool(parameters.get("binary_data_output", False)) if isinstance(parameters, dict) else False
    outputs = payload.get("outputs")
    if outputs is None:
        return default
    form = f'send \'outputs\': [{{"name": "{OUTPUT_NAME}"}}] (a list of objects) or leave it out'
    if not isinstance(outputs, list):
        raise ProtocolError(400, f"'outputs' is {outputs!r} ({type(outputs).__name__}); {form}")
    binary = default
    for item in outputs:
        if not isinstance(item, dict):
            raise ProtocolError(400, f"'outputs' holds {item!r}, not an object; {form}")
        if item.get("name") != OUTPUT_NAME:
            raise ProtocolError(
                400, f"requested output {item.get('name')!r}; this model has one output {OUTPUT_NAME!r}"
            )
        wanted = item.get("parameters")
        if isinstance(wanted, dict) and "binary_data" in wanted:
            binary = bool(wanted["binary_data"])
    return binary


def v2_response(
    name: str, version: str, probabilities: np.ndarray, request: V2Request
) -> tuple[bytes, int | None]:
    """The response body and, for binary output, the length of its JSON header."""
    output: dict[str, Any] = {"name": OUTPUT_NAME, "datatype": "FP32", "shape": [len(probabilities)]}
    if request.binary_output:
        raw = probabilities.astype("<f4", copy=False).tobytes()
        output["parameters"] = {"binary_data_size": len(raw)}
    else:
        output["data"] = probabilities
    body: dict[str, Any] = {"model_name": name, "model_version": version, "outputs": [output]}
    if request.request_id is not None:
        body["id"] = request.request_id
    header = orjson.dumps(body, option=orjson.OPT_SERIALIZE_NUMPY)
    if not request.binary_output:
        return header, None
    return header + raw, len(header)


class RowEncoder:
    """Encodes V1 named-feature rows exactly like :meth:`FeatureSpec.encode`, without pandas per request."""

    def __init__(self, spec: FeatureSpec):
        self.spec = spec
        self.numeric = spec.numeric
        self.known = frozenset(spec.names)
        self.categorical = tuple(
            (name, {value: code + 1 for code, value in enumerate(vocab)})
            for name, vocab in zip(spec.categorical, spec.vocabularies, strict=True)
        )

    def encode(self, rows: list[dict[str, Any]]) -> np.ndarray:
        """float64 [rows, n_features] (numerics raw, categoricals as codes); :class:`FeatureBounds` converts."""
        out = np.empty((len(rows), self.spec.n_features), dtype=np.float64)
        offset = len(self.numeric)
        for r, row in enumerate(rows):
            if len(row) != len(self.known) or not self.known.issuperset(row):
                self._wrong_names(r, row)
            for i, name in enumerate(self.numeric):
                value = row[name]
                if value is None:
                    out[r, i] = math.nan
                elif isinstance(value, bool) or not isinstance(value, int | float):
                    raise ProtocolError(
                        400, f"instance {r} feature {name!r} is {value!r}; it must be a number"
                    )
                else:
                    out[r, i] = value
            for j, (name, index) in enumerate(self.categorical):
                value = row[name]
                out[r, offset + j] = 0 if value is None else index.get(str(value), 0)
        return out

    def _wrong_names(self, r: int, row: dict[str, Any]) -> None:
        names = list(self.spec.names)
        missing = [name for name in names if name not in row]
        if missing:
            raise ProtocolError(
                400,
                f"instance {r} lacks feature(s) {missing}; send all of {names} (null for a missing value)",
            )
        extra = [name for name in row if name not in self.known]
        raise ProtocolError(
            400, f"instance {r} has unknown feature(s) {extra}; this model takes exactly {names}"
        )


def parse_v1_predict(payload: Any, bounds: FeatureBounds, encoder: RowEncoder) -> np.ndarray:
    """``{"instances": [[...], ...]}`` or ``{"instances": [{"feature": value, ...}, ...]}`` as a matrix."""
    width = len(bounds.names)
    expected = f"send {{'instances': [[{width} numbers], ...]}} or rows of named features"
    if not isinstance(payload, dict) or "instances" not in payload:
        raise ProtocolError(400, f"a V1 predict request is a JSON object with 'instances'; {expected}")
    instances = payload["instances"]
    if not isinstance(instances, list):
        raise ProtocolError(400, f"'instances' must be a list, got {type(instances).__name__}; {expected}")
    if instances and all(isinstance(row, dict) for row in instances):
        return bounds.admit(encoder.encode(instances), "'instances'")
    if any(isinstance(row, dict) for row in instances):
        raise ProtocolError(
            400, "'instances' mixes named-feature objects and lists; use one form per request"
        )
    if not all(isinstance(row, list) for row in instances):
        raise ProtocolError(400, f"each instance must be a list of {width} numbers or an object; {expected}")
    return bounds.admit(to_matrix(instances, len(instances), width, "'instances'"), "'instances'")


def v1_response(probabilities: np.ndarray) -> bytes:
    return orjson.dumps({"predictions": probabilities}, option=orjson.OPT_SERIALIZE_NUMPY)


def model_metadata(name: str, version: str, spec: FeatureSpec, precision: str) -> bytes:
    return orjson.dumps(
        {
            "name": name,
            "versions": [version],
            "platform": PLATFORM,
            "inputs": [{"name": INPUT_NAME, "datatype": "FP32", "shape": [-1, spec.n_features]}],
            "outputs": [{"name": OUTPUT_NAME, "datatype": "FP32", "shape": [-1]}],
            "parameters": {
                "feature_names": list(spec.names),
                "categorical_vocabularies": {
                    n: list(v) for n, v in zip(spec.categorical, spec.vocabularies, strict=True)
                },
                "precision": precision,
                # What the output is the probability of: the label's positive value (the schema's positive_label).
                "label": spec.label,
                "negative_class": spec.classes[0],
                "positive_class": spec.classes[1],
            },
        }
    )


def error_body(message: str) -> bytes:
    return orjson.dumps({"error": message})
