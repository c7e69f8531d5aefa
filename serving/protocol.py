"""Request parsing and response building for the KServe V2 (Open Inference) and V1 REST protocols.

Every malformed request ends here as a :class:`ProtocolError` carrying the HTTP
status and a message that names the bad value and the expected form, so a client
can fix its request from the error alone. JSON has no NaN: a ``null`` inside a
tensor stands for a missing value, which the model imputes like training did.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson

from mlops.onnx_model import INPUT_NAME, OUTPUT_NAME

if TYPE_CHECKING:
    from mlops.features import FeatureSpec

V2_DATATYPES = ("FP32", "FP64")
PLATFORM = "onnxruntime_onnx"


class ProtocolError(Exception):
    """A client error: ``status`` is the HTTP code, ``message`` the explanation returned as JSON."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def decode_json(body: bytes) -> Any:
    if not body:
        raise ProtocolError(400, "request body is empty; send a JSON object")
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise ProtocolError(400, f"request body is not valid JSON: {exc}") from exc


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
    """``data`` (flat or nested list of numbers) as float32 [rows, width]."""
    if not isinstance(data, list):
        raise ProtocolError(400, f"{where} must be a list of numbers, got {type(data).__name__}")
    try:
        array = np.asarray(data)
    except ValueError as exc:  # ragged nesting
        raise ProtocolError(400, f"{where} is ragged: every row must have {width} values ({exc})") from exc
    if array.dtype.kind == "O":
        if array.ndim > 1 and array.shape[-1] != width:
            raise ProtocolError(400, f"{where} rows have {array.shape[-1]} values; this model takes {width}")
        flat = _numbers_or_nulls(data, where)
        if flat.size != rows * width:
            raise ProtocolError(
                400, f"{where} holds {flat.size} values; shape [{rows}, {width}] needs {rows * width}"
            )
        return flat.reshape(rows, width).astype(np.float32)
    if array.dtype.kind not in "fiu":
        kind = "strings" if array.dtype.kind in "US" else f"{array.dtype} values"
        raise ProtocolError(400, f"{where} holds {kind}; only numbers (or null for missing) are accepted")
    if array.shape not in ((rows * width,), (rows, width)):
        raise ProtocolError(
            400,
            f"{where} has shape {list(array.shape)}; expected [{rows}, {width}] or a flat list of "
            f"{rows * width} values",
        )
    return array.reshape(rows, width).astype(np.float32, copy=False)


def parse_v2_infer(payload: Any, width: int) -> tuple[np.ndarray, str | None]:
    """The ``features`` tensor of a V2 inference request, and the request id to echo back."""
    expected = f"this model takes one input {INPUT_NAME!r} of datatype FP32 and shape [N, {width}]"
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
    if "data" not in tensor:
        raise ProtocolError(400, f"input {INPUT_NAME!r} has no 'data'; {expected}")
    outputs = payload.get("outputs")
    if outputs is not None:
        wanted = (
            [o.get("name") if isinstance(o, dict) else o for o in outputs]
            if isinstance(outputs, list)
            else []
        )
        if not isinstance(outputs, list) or any(name != OUTPUT_NAME for name in wanted):
            raise ProtocolError(
                400, f"requested outputs {outputs!r}; this model has one output {OUTPUT_NAME!r}"
            )
    request_id = payload.get("id")
    matrix = to_matrix(tensor["data"], shape[0], width, f"input {INPUT_NAME!r} data")
    return matrix, request_id if isinstance(request_id, str) else None


def v2_response(name: str, version: str, probabilities: np.ndarray, request_id: str | None) -> bytes:
    body: dict[str, Any] = {
        "model_name": name,
        "model_version": version,
        "outputs": [
            {"name": OUTPUT_NAME, "datatype": "FP32", "shape": [len(probabilities)], "data": probabilities}
        ],
    }
    if request_id is not None:
        body["id"] = request_id
    return orjson.dumps(body, option=orjson.OPT_SERIALIZE_NUMPY)


class RowEncoder:
    """Encodes V1 named-feature rows exactly like :meth:`FeatureSpec.encode`, without pandas per request."""

    def __init__(self, spec: FeatureSpec):
        self.spec = spec
        self.numeric = spec.numeric
        self.categorical = tuple(
            (name, {value: code + 1 for code, value in enumerate(vocab)})
            for name, vocab in zip(spec.categorical, spec.vocabularies, strict=True)
        )

    def encode(self, rows: list[dict[str, Any]]) -> np.ndarray:
        out = np.empty((len(rows), self.spec.n_features), dtype=np.float32)
        offset = len(self.numeric)
        for r, row in enumerate(rows):
            missing = [name for name in self.spec.names if name not in row]
            if missing:
                raise ProtocolError(
                    400,
                    f"instance {r} lacks feature(s) {missing}; send all of {list(self.spec.names)} "
                    "(null for a missing value)",
                )
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


def parse_v1_predict(payload: Any, width: int, encoder: RowEncoder) -> np.ndarray:
    """``{"instances": [[...], ...]}`` or ``{"instances": [{"feature": value, ...}, ...]}`` as a matrix."""
    expected = f"send {{'instances': [[{width} numbers], ...]}} or rows of named features"
    if not isinstance(payload, dict) or "instances" not in payload:
        raise ProtocolError(400, f"a V1 predict request is a JSON object with 'instances'; {expected}")
    instances = payload["instances"]
    if not isinstance(instances, list):
        raise ProtocolError(400, f"'instances' must be a list, got {type(instances).__name__}; {expected}")
    if instances and all(isinstance(row, dict) for row in instances):
        return encoder.encode(instances)
    if any(isinstance(row, dict) for row in instances):
        raise ProtocolError(
            400, "'instances' mixes named-feature objects and lists; use one form per request"
        )
    if not all(isinstance(row, list) for row in instances):
        raise ProtocolError(400, f"each instance must be a list of {width} numbers or an object; {expected}")
    return to_matrix(instances, len(instances), width, "'instances'")


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
