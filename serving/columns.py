"""Per-column V2 inputs: one named input per data column, as MLServer's pandas codec and Triton clients send a table.

Besides the packed ``features`` tensor (the model's own input, categoricals as integer
codes), a V2 request may carry one input per column of the data: numbers as FP32, FP64,
INT8..INT64 or UINT8..UINT64, categoricals as BYTES (UTF-8 strings) — exactly what
``mlserver.codecs.PandasCodec.encode_request`` (request ``parameters.content_type: "pd"``,
per input ``content_type: "str"`` for strings) and ``tritonclient``'s ``InferInput`` with
an object array send. Each input has shape ``[N]`` or ``[N, 1]``. The columns are encoded
by the model's own contract (its :class:`~mlops.data.features.FeatureSpec`: the same
string-to-code mapping as :meth:`FeatureSpec.encode`, unseen or missing categories become
code 0) into the same matrix the packed form carries, so both forms score alike.

Columns the schema declares as label, protected or ignored (``FeatureSpec.not_inputs``)
may be sent and are dropped; a column the model does not know is refused by name, and so
is a missing feature. This module is used only when a request is per-column: the packed
form never passes through it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from serving.errors import InvalidInput

if TYPE_CHECKING:
    from mlops.data.features import FeatureSpec

BYTES = "BYTES"
NUMERIC_DTYPES: dict[str, np.dtype] = {
    name: np.dtype(code)
    for name, code in (
        ("FP32", "<f4"), ("FP64", "<f8"),
        ("INT8", "<i1"), ("INT16", "<i2"), ("INT32", "<i4"), ("INT64", "<i8"),
        ("UINT8", "<u1"), ("UINT16", "<u2"), ("UINT32", "<u4"), ("UINT64", "<u8"),
    )
}  # fmt: skip
"""The wire datatypes of a numeric column and their little-endian numpy types."""
COLUMN_DATATYPES = (*NUMERIC_DTYPES, BYTES)


@dataclass(slots=True)
class Column:
    """One per-column input as its transport decoded it."""

    name: str
    datatype: str
    values: np.ndarray | list[str | None]
    """float64 (NaN = missing) for a numeric datatype, strings (None = missing) for BYTES."""


def column_rows(name: str, datatype: Any, shape: Any) -> int:
    """The row count of per-column input ``name`` (shape ``[N]`` or ``[N, 1]``); checks its datatype."""
    if datatype not in COLUMN_DATATYPES:
        raise InvalidInput(
            f"input {name!r} has datatype {datatype!r}; a column is sent as one of {list(COLUMN_DATATYPES)} "
            "(numbers as FP32/FP64/INT*, categories as BYTES)"
        )
    if not (
        type(shape) is list
        and len(shape) in (1, 2)
        and all(type(d) is int for d in shape)
        and shape[0] >= 0
        and (len(shape) == 1 or shape[1] == 1)
    ):
        raise InvalidInput(f"input {name!r} has shape {shape!r}; a column has shape [N] or [N, 1]")
    return int(shape[0])


def json_column(name: str, datatype: str, data: Any, rows: int) -> Column:
    """A column from a JSON ``data`` list (flat or ``[N, 1]`` nested; ``null`` = missing)."""
    where = f"input {name!r}"
    if not isinstance(data, list):
        raise InvalidInput(f"{where} data must be a list, got {type(data).__name__}")
    flat = [item[0] if isinstance(item, list) and len(item) == 1 else item for item in data]
    if len(flat) != rows:
        raise InvalidInput(f"{where} holds {len(flat)} values; its shape says {rows}")
    if datatype == BYTES:
        for value in flat:
            if value is not None and not isinstance(value, str):
                raise InvalidInput(f"{where} (BYTES) holds {value!r}; send strings (null for missing)")
        return Column(name, datatype, flat)
    integer = datatype[0] in "IU"
    dtype = NUMERIC_DTYPES[datatype]
    out = np.empty(rows, dtype=np.float64)
    for i, value in enumerate(flat):
        if value is None:
            out[i] = math.nan
        elif isinstance(value, bool) or not isinstance(value, int | float):
            raise InvalidInput(f"{where} ({datatype}) holds {value!r}; send numbers (null for missing)")
        elif integer and not isinstance(value, int):
            raise InvalidInput(f"{where} ({datatype}) holds {value!r}; an integer datatype takes integers")
        elif integer and not np.iinfo(dtype).min <= value <= np.iinfo(dtype).max:
            raise InvalidInput(f"{where} holds {value}, which is out of range for {datatype}")
        else:
            out[i] = value
    return Column(name, datatype, out)


def binary_column(name: str, datatype: str, raw: bytes, rows: int) -> Column:
    """A column from raw little-endian bytes (binary extension or gRPC ``raw_input_contents``)."""
    where = f"input {name!r}"
    if datatype == BYTES:
        return Column(name, datatype, bytes_elements(raw, rows, where))
    dtype = NUMERIC_DTYPES[datatype]
    if len(raw) != rows * dtype.itemsize:
        raise InvalidInput(
            f"{where} carries {len(raw)} bytes of binary data; shape [{rows}] of {datatype} needs "
            f"{rows * dtype.itemsize} ({dtype.itemsize} bytes per value, little-endian)"
        )
    return Column(name, datatype, np.frombuffer(raw, dtype=dtype).astype(np.float64))


def bytes_elements(raw: bytes, rows: int, where: str) -> list[str | None]:
    """``rows`` strings of a binary BYTES tensor: each a 4-byte little-endian length, then UTF-8 bytes."""
    out: list[str | None] = []
    at, size = 0, len(raw)
    for _ in range(rows):
        if at + 4 > size:
            raise InvalidInput(
                f"{where} (BYTES) ends after {len(out)} of {rows} elements; each element is "
                "a 4-byte little-endian length followed by that many bytes"
            )
        length = int.from_bytes(raw[at : at + 4], "little")
        at += 4
        if at + length > size:
            raise InvalidInput(
                f"{where} (BYTES) element {len(out)} declares {length} bytes but {size - at} remain"
            )
        try:
            out.append(raw[at : at + length].decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise InvalidInput(f"{where} (BYTES) element {len(out)} is not UTF-8: {exc}") from exc
        at += length
    if at != size:
        raise InvalidInput(f"{where} (BYTES) has {size - at} surplus bytes after its {rows} elements")
    return out


def column_texts(column: Column) -> list[str | None]:
    """A column's values as text, as the request log keeps a subject key (an integer id as ``"42"``)."""
    if isinstance(column.values, list):
        return list(column.values)
    return [
        None if math.isnan(v) else (str(int(v)) if float(v).is_integer() else repr(float(v)))
        for v in column.values.tolist()
    ]


class ColumnReader:
    """Assembles per-column inputs into the model's encoded matrix, by its :class:`FeatureSpec`; one per model."""

    def __init__(self, spec: FeatureSpec):
        self.names = spec.names
        self.width = spec.n_features
        self.numeric = {name: i for i, name in enumerate(spec.numeric)}
        offset = len(spec.numeric)
        self.categorical = {
            name: (offset + j, {value: code + 1 for code, value in enumerate(vocab)})
            for j, (name, vocab) in enumerate(zip(spec.categorical, spec.vocabularies, strict=True))
        }
        self.not_inputs = spec.not_inputs
        self.form = (
            f"one input per feature column {list(self.names)} (numbers as FP32/FP64/INT*, categories as BYTES, "
            f"shape [N] or [N, 1]); {sorted(self.not_inputs)} may be sent and are ignored"
        )

    def knows(self, name: Any) -> bool:
        """Whether ``name`` is a column of the model's data (a feature, or a declared non-input)."""
        return isinstance(name, str) and (
            name in self.numeric or name in self.categorical or name in self.not_inputs
        )

    def assemble(self, columns: list[Column], rows: int) -> np.ndarray:
        """float64 [rows, width]: numerics raw (NaN = missing), categoricals as codes (0 = missing/unseen)."""
        seen: set[str] = set()
        for column in columns:
            if column.name in seen:
                raise InvalidInput(f"input {column.name!r} appears twice; send each column once")
            seen.add(column.name)
        unknown = [c.name for c in columns if not self.knows(c.name)]
        if unknown:
            raise InvalidInput(f"unknown input column(s) {unknown}; send {self.form}")
        missing = [name for name in self.names if name not in seen]
        if missing:
            raise InvalidInput(f"missing input column(s) {missing}; send {self.form} (null/NaN for missing)")
        out = np.empty((rows, self.width), dtype=np.float64)
        for column in columns:
            if column.name in self.numeric:
                out[:, self.numeric[column.name]] = self._numbers(column)
            elif column.name in self.categorical:
                index, codes = self.categorical[column.name]
                out[:, index] = _codes(column, codes)
        return out

    @staticmethod
    def _numbers(column: Column) -> np.ndarray:
        if isinstance(column.values, list):
            raise InvalidInput(
                f"input {column.name!r} is a numeric feature sent as {column.datatype}; send it as FP32, FP64 "
                "or INT* (NaN or null for missing)"
            )
        values = column.values
        with np.errstate(over="ignore", invalid="ignore"):
            bad = np.isinf(values.astype(np.float32))
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise InvalidInput(
                f"input {column.name!r}: row {row} is {float(values[row])!r}, which is not a finite FP32 number (the "
                "model's input type, at most ±3.4e38); send a finite number, or null (NaN in binary) for missing"
            )
        return values


def _codes(column: Column, codes: dict[str, int]) -> list[int]:
    """A categorical column's codes, keyed like :meth:`FeatureSpec.encode` (``str`` of the value)."""
    if isinstance(column.values, list):
        return [0 if v is None else codes.get(v, 0) for v in column.values]
    integer = column.datatype[0] in "IU"
    return [
        0 if v != v else codes.get(str(int(v)) if integer else str(float(v)), 0)
        for v in column.values.tolist()
    ]
