"""REST's wire formats: the KServe V2 (Open Inference) JSON and binary-tensor bodies, and V1.

Decoding turns a body into the data plane's terms (:mod:`serving.dataplane`): the
request id and requested outputs, and an :class:`~serving.dataplane.Inputs` that reads
the tensor against the model contract the data plane hands it. Encoding writes an
:class:`~serving.dataplane.InferResponse` or the metadata records back as JSON (plus the
binary section when asked). Every malformed body ends as an
:class:`~serving.errors.InvalidInput` whose message names the bad value and the
expected form, so a client can fix its request from the error alone. JSON has no NaN: a
``null`` inside a tensor stands for a missing value, which the model imputes like
training did.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import orjson

from mlops.model.onnx_model import INPUT_NAME, OUTPUT_NAME
from serving.columns import binary_column, column_rows, column_texts, json_column
from serving.dataplane import INPUT_WHERE, describe
from serving.entity_features import ENTITY_DATATYPES, entity_ids, raw_ids
from serving.errors import InvalidInput
from serving.explanations import EXPLAIN_PARAMETER, REASONS_OUTPUT
from serving.tensors import binary_size, from_binary

if TYPE_CHECKING:
    from mlops.data.features import FeatureSpec
    from serving.dataplane import InferResponse, ModelContract


def decode_json(body: bytes) -> Any:
    if not body:
        raise InvalidInput("request body is empty; send a JSON object")
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        hint = ""
        if b"NaN" in body or b"Infinity" in body:
            hint = "; NaN and Infinity are not JSON: send null for a missing value (or use binary data)"
        raise InvalidInput(f"request body is not valid JSON: {exc}{hint}") from exc


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
            raise InvalidInput(f"{where} holds {item!r}; only numbers (or null for missing) are accepted")
        else:
            flat.append(item)
    return np.asarray(flat, dtype=np.float64)


def to_matrix(data: Any, rows: int, width: int, where: str) -> np.ndarray:
    """``data`` (flat or nested list of numbers, ``null`` = missing) as a [rows, width] array, unconverted."""
    if not isinstance(data, list):
        raise InvalidInput(f"{where} must be a list of numbers, got {type(data).__name__}")
    try:
        array = np.asarray(data)
    except (ValueError, OverflowError) as exc:  # ragged nesting; an integer beyond 64 bits
        raise InvalidInput(
            f"{where} is ragged or out of range ({exc}); every row must have {width} numbers"
        ) from exc
    if array.dtype.kind == "O":
        if array.ndim > 1 and array.shape[-1] != width:
            raise InvalidInput(f"{where} rows have {array.shape[-1]} values; this model takes {width}")
        flat = _numbers_or_nulls(data, where)
        if flat.size != rows * width:
            raise InvalidInput(
                f"{where} holds {flat.size} values; shape [{rows}, {width}] needs {rows * width}"
            )
        return flat.reshape(rows, width)
    if array.dtype.kind not in "fiu":
        kind = "strings" if array.dtype.kind in "US" else f"{array.dtype} values"
        raise InvalidInput(f"{where} holds {kind}; only numbers (or null for missing) are accepted")
    if array.shape not in ((rows * width,), (rows, width)):
        raise InvalidInput(
            f"{where} has shape {list(array.shape)}; expected [{rows}, {width}] or a flat list of "
            f"{rows * width} values",
        )
    return array.reshape(rows, width)


class V2Inputs:
    """The ``features`` tensor of a V2 JSON body: JSON ``data`` or, with the binary extension, raw bytes."""

    __slots__ = ("binary", "payload")
    where: ClassVar[str] = INPUT_WHERE

    def __init__(self, payload: Any, binary: bytes = b""):
        self.payload = payload
        self.binary = binary
        """The bytes after the JSON header (``Inference-Header-Content-Length``); empty without the extension."""

    def read(self, contract: ModelContract) -> np.ndarray:
        payload, binary, expected = self.payload, self.binary, contract.expected
        if not isinstance(payload, dict):
            raise InvalidInput(f"a V2 inference request is a JSON object with 'inputs'; {expected}")
        inputs = payload.get("inputs")
        if not isinstance(inputs, list) or not inputs:
            raise InvalidInput(f"request has no 'inputs' list; {expected}")
        if not contract.check_inputs(
            [item.get("name") if isinstance(item, dict) else None for item in inputs]
        ):
            return self._columns(inputs, binary, contract)
        tensor = inputs[0]
        datatype = tensor.get("datatype")
        rows = contract.check_tensor(datatype, tensor.get("shape"))
        where = self.where
        size = binary_size(tensor.get("parameters"), where)
        if size is not None:
            if "data" in tensor:
                raise InvalidInput(f"{where} has both 'data' and binary_data_size; send one of them")
            if size != len(binary):
                raise InvalidInput(
                    f"{where} declares binary_data_size {size} but {len(binary)} bytes follow the JSON header "
                    "(Inference-Header-Content-Length)",
                )
            return from_binary(binary, datatype, rows, contract.width, where)
        if "data" not in tensor:
            raise InvalidInput(f"{where} has no 'data' (nor binary_data_size); {expected}")
        if binary:
            raise InvalidInput(
                f"{len(binary)} bytes of binary data follow the JSON header but no input declares binary_data_size",
            )
        return to_matrix(tensor["data"], rows, contract.width, f"{where} data")

    @staticmethod
    def _columns(inputs: list[Any], binary: bytes, contract: ModelContract) -> np.ndarray:
        """One input per data column (:mod:`serving.columns`); binary sections follow in input order."""
        columns, rows, at = [], None, 0
        for item in inputs:
            if not isinstance(item, dict):
                raise InvalidInput(f"'inputs' holds {item!r}, not an object; {contract.columns.form}")
            name: Any = item.get("name")
            datatype: Any = item.get("datatype")
            n = column_rows(name, datatype, item.get("shape"))
            if rows is not None and n != rows:
                raise InvalidInput(
                    f"input {name!r} has {n} rows but input {inputs[0].get('name')!r} has {rows}"
                )
            rows = n
            size = binary_size(item.get("parameters"), f"input {name!r}")
            if size is None:
                if "data" not in item:
                    raise InvalidInput(f"input {name!r} has no 'data' (nor binary_data_size)")
                columns.append(json_column(name, datatype, item["data"], n))
                continue
            if "data" in item:
                raise InvalidInput(f"input {name!r} has both 'data' and binary_data_size; send one of them")
            if at + size > len(binary):
                raise InvalidInput(
                    f"input {name!r} declares binary_data_size {size} but only {len(binary) - at} bytes of binary "
                    "data remain after the JSON header (Inference-Header-Content-Length)"
                )
            columns.append(binary_column(name, datatype, binary[at : at + size], n))
            at += size
        if at != len(binary):
            raise InvalidInput(
                f"{len(binary) - at} surplus bytes of binary data follow the inputs' binary_data_size total of {at}"
            )
        return contract.columns.assemble(columns, rows or 0)

    def subjects(self, name: str) -> list[str | None] | None:
        inputs = self.payload.get("inputs") if isinstance(self.payload, dict) else None
        at = 0
        for item in inputs if isinstance(inputs, list) else []:
            if not isinstance(item, dict):
                return None
            size = binary_size(item.get("parameters"), f"input {item.get('name')!r}")
            if item.get("name") == name:
                datatype: Any = item.get("datatype")
                n = column_rows(name, datatype, item.get("shape"))
                if size is None:
                    return column_texts(json_column(name, datatype, item.get("data"), n))
                return column_texts(binary_column(name, datatype, self.binary[at : at + size], n))
            at += size or 0
        return None

    def keyed(self) -> tuple[str, list[Any]] | None:
        inputs = self.payload.get("inputs") if isinstance(self.payload, dict) else None
        if not isinstance(inputs, list) or len(inputs) != 1 or not isinstance(inputs[0], dict):
            return None
        item = inputs[0]
        name, datatype, shape = item.get("name"), item.get("datatype"), item.get("shape")
        if name == INPUT_NAME or datatype not in ENTITY_DATATYPES:
            return None
        values = item.get("data")
        if values is None and self.binary and type(shape) is list and shape and type(shape[0]) is int:
            values = raw_ids(datatype, self.binary, shape[0])
        return entity_ids(name, datatype, shape, values)


def request_id(payload: Any) -> str | int | None:
    """The V2 body's ``id`` (a string or an integer), echoed in the response; anything else is ignored."""
    found = payload.get("id") if isinstance(payload, dict) else None
    return None if isinstance(found, bool) or not isinstance(found, str | int) else found


def requested_outputs(payload: Any) -> tuple[bool, list[Any]]:
    """Whether the client wants the output as binary data, and the output names it asked for.

    Binary: per output (``parameters.binary_data``), else for the whole request
    (``parameters.binary_data_output``). Whether the names are the model's is the data
    plane's check, the same for every protocol.
    """
    if not isinstance(payload, dict):
        return False, []  # the data plane refuses the body itself
    parameters = payload.get("parameters")
    binary = bool(parameters.get("binary_data_output", False)) if isinstance(parameters, dict) else False
    outputs = payload.get("outputs")
    if outputs is None:
        return binary, []
    form = f'send \'outputs\': [{{"name": "{OUTPUT_NAME}"}}] (a list of objects) or leave it out'
    if not isinstance(outputs, list):
        raise InvalidInput(f"'outputs' is {outputs!r} ({type(outputs).__name__}); {form}")
    names = []
    for item in outputs:
        if not isinstance(item, dict):
            raise InvalidInput(f"'outputs' holds {item!r}, not an object; {form}")
        names.append(item.get("name"))
        wanted = item.get("parameters")
        if isinstance(wanted, dict) and "binary_data" in wanted:
            binary = bool(wanted["binary_data"])
    return binary, names


def explain_requested(payload: Any) -> bool:
    """Whether a V2 body asks for reasons: request ``parameters: {"explain": true}`` (a JSON boolean)."""
    parameters = payload.get("parameters") if isinstance(payload, dict) else None
    if not isinstance(parameters, dict) or EXPLAIN_PARAMETER not in parameters:
        return False
    wanted = parameters[EXPLAIN_PARAMETER]
    if not isinstance(wanted, bool):
        raise InvalidInput(
            f"parameters.{EXPLAIN_PARAMETER} is {wanted!r}; send true to answer each row's reasons, or leave it out"
        )
    return wanted


def reasons_output(reasons: list[list[dict[str, Any]]]) -> dict[str, Any]:
    """The V2 output carrying reasons: BYTES, shape ``[N]``, each element one row's reasons as a JSON text."""
    return {
        "name": REASONS_OUTPUT,
        "datatype": "BYTES",
        "shape": [len(reasons)],
        "parameters": {"content_type": "str"},
        "data": [orjson.dumps(row).decode() for row in reasons],
    }


def v2_response(response: InferResponse, binary_output: bool) -> tuple[bytes, int | None]:
    """The response body and, for binary output, the length of its JSON header."""
    probabilities = response.probabilities
    output: dict[str, Any] = {"name": OUTPUT_NAME, "datatype": "FP32", "shape": [len(probabilities)]}
    if binary_output:
        raw = probabilities.astype("<f4", copy=False).tobytes()
        output["parameters"] = {"binary_data_size": len(raw)}
    else:
        output["data"] = probabilities
    body: dict[str, Any] = {
        "model_name": response.model_name,
        "model_version": response.model_version,
        "outputs": [output] if response.reasons is None else [output, reasons_output(response.reasons)],
    }
    if response.id is not None:
        body["id"] = response.id
    header = orjson.dumps(body, option=orjson.OPT_SERIALIZE_NUMPY)
    if not binary_output:
        return header, None
    return header + raw, len(header)


class V1Inputs:
    """``{"instances": [[...], ...]}`` or ``{"instances": [{"feature": value, ...}, ...]}``."""

    __slots__ = ("payload",)
    where: ClassVar[str] = "'instances'"

    def __init__(self, payload: Any):
        self.payload = payload

    def read(self, contract: ModelContract) -> np.ndarray:
        payload, width = self.payload, contract.width
        expected = f"send {{'instances': [[{width} numbers], ...]}} or rows of named features"
        if not isinstance(payload, dict) or "instances" not in payload:
            raise InvalidInput(f"a V1 predict request is a JSON object with 'instances'; {expected}")
        instances = payload["instances"]
        if not isinstance(instances, list):
            raise InvalidInput(f"'instances' must be a list, got {type(instances).__name__}; {expected}")
        if instances and all(isinstance(row, dict) for row in instances):
            return contract.encoder.encode(instances)
        if any(isinstance(row, dict) for row in instances):
            raise InvalidInput("'instances' mixes named-feature objects and lists; use one form per request")
        if not all(isinstance(row, list) for row in instances):
            raise InvalidInput(f"each instance must be a list of {width} numbers or an object; {expected}")
        return to_matrix(instances, len(instances), width, self.where)

    def subjects(self, name: str) -> list[str | None] | None:
        instances = self.payload.get("instances") if isinstance(self.payload, dict) else None
        if not isinstance(instances, list) or not all(isinstance(row, dict) for row in instances):
            return None
        return [None if row.get(name) is None else str(row.get(name)) for row in instances]

    def keyed(self) -> tuple[str, list[Any]] | None:
        instances = self.payload.get("instances") if isinstance(self.payload, dict) else None
        if not isinstance(instances, list) or not instances:
            return None
        first = instances[0]
        if not isinstance(first, dict) or len(first) != 1:
            return None
        (name,) = first
        ids = []
        for row in instances:
            if not isinstance(row, dict) or len(row) != 1 or name not in row:
                return None
            value = row[name]
            if type(value) is not str and type(value) is not int:
                return None
            ids.append(value)
        return name, ids


def v1_response(probabilities: np.ndarray) -> bytes:
    return orjson.dumps({"predictions": probabilities}, option=orjson.OPT_SERIALIZE_NUMPY)


def v1_explain_response(response: InferResponse) -> bytes:
    """``{"explanations": [{"score": p, "reasons": [...]}, ...]}``, one entry per instance, in order."""
    reasons = response.reasons or []
    return orjson.dumps(
        {
            "explanations": [
                {"score": float(p), "reasons": row}
                for p, row in zip(response.probabilities.tolist(), reasons, strict=True)
            ]
        }
    )


def model_metadata(name: str, version: str, spec: FeatureSpec, precision: str) -> bytes:
    """The V2 model metadata JSON of ``name`` ``version`` (what ``GET /v2/models/<name>`` answers)."""
    return orjson.dumps(describe(name, version, spec, precision))
