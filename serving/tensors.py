"""Input tensors as the model may see them: the strict numeric check and the binary tensor extension.

Every protocol (V2 JSON, V2 binary, V1, gRPC) ends in :meth:`FeatureBounds.admit`, which
converts the parsed values to the model's input type (FP32) and refuses, with a 400
naming the input, the row, the feature and the value, anything the model was never
trained to see: a number that is not finite in FP32 (``inf``, or ``1e300`` which
overflows it) and a categorical code that is not one of the feature's codes
(``0`` = missing or unknown, ``1..K`` = the vocabulary, in order). A missing value is
``null`` in JSON and NaN in binary or gRPC contents; for numeric features the model
imputes it like training did, for categorical ones it becomes code 0. Nothing else
that is not finite reaches the model or the request log.

:class:`RowEncoder` turns rows of named raw features (V1's ``{"age": 41, "region": "north"}``)
into the same encoded matrix, exactly like training's :meth:`FeatureSpec.encode`.

The binary extension (`Inference-Header-Content-Length`, `binary_data_size`,
`binary_data` / `binary_data_output`) carries tensors as raw little-endian bytes after
the JSON header, which is what ``tritonclient`` sends by default.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from serving.errors import InvalidInput

if TYPE_CHECKING:
    from mlops.data.features import FeatureSpec

SMALL_INPUT = 96
"""Values up to which :meth:`FeatureBounds.admit` first checks in plain Python: on a single row of 20 features
the array checks pay numpy's per-call overhead a dozen times (14.6 µs measured against 4.7 µs); at about five
such rows the two cost the same, and above it the array checks win."""
# Wire datatypes the ``features`` input accepts, and their little-endian numpy types.
DTYPES: dict[str, np.dtype] = {"FP32": np.dtype("<f4"), "FP64": np.dtype("<f8")}
HEADER_LENGTH = "inference-header-content-length"
BINARY_EXTENSION = "binary_tensor_data"


class FeatureBounds:
    """What an encoded row of one :class:`~mlops.data.features.FeatureSpec` may hold; built once per model."""

    def __init__(self, spec: FeatureSpec):
        self.names = spec.names
        self.offset = len(spec.numeric)
        self.vocabularies = spec.vocabularies
        self.top_code = np.array([len(v) for v in spec.vocabularies], dtype=np.float32)
        self.width = spec.n_features
        self._tops = [float(len(v)) for v in spec.vocabularies]

    def admit(self, values: np.ndarray, where: str) -> np.ndarray:
        """``values`` ([rows, n_features], any numeric dtype) as the float32 matrix the model takes.

        Raises :class:`~serving.errors.InvalidInput` naming the first value that is not finite in
        FP32 (NaN excepted: it means missing) or not a valid categorical code.
        """
        with np.errstate(over="ignore", invalid="ignore"):
            x = values.astype(np.float32, copy=False)
        if x.size <= SMALL_INPUT and self._clean(x):
            return x
        return self._admit_array(x, values, where)

    def _clean(self, x: np.ndarray) -> bool:
        """Whether :meth:`admit` has nothing to refuse or change in ``x``: no infinity anywhere and every
        categorical code one of its column's (a missing code, NaN, is a change). A pass over Python floats;
        anything else goes to the array checks, which answer it."""
        flat = x.ravel().tolist()
        if math.inf in flat or -math.inf in flat:
            return False
        tops, offset, width = self._tops, self.offset, self.width
        for start in range(offset, len(flat), width):
            for code, top in zip(flat[start : start + width - offset], tops, strict=True):
                if not 0.0 <= code <= top or code != int(code):  # NaN fails the first test
                    return False
        return True

    def _admit_array(self, x: np.ndarray, values: np.ndarray, where: str) -> np.ndarray:
        """:meth:`admit`'s checks on the whole array at once (``x`` is ``values`` as float32)."""
        if not np.isfinite(x).all():
            bad = np.isinf(x)
            if bad.any():
                row, col = (int(i) for i in np.argwhere(bad)[0])
                raise InvalidInput(
                    f"{where}: row {row}, feature {self.names[col]!r} (column {col}) is "
                    f"{_show(values[row, col])}, which is not a finite FP32 number (the model's input "
                    f"type, at most ±3.4e38); send a finite number, or null (NaN in binary) for missing",
                )
        if len(self.top_code):
            x = self._check_codes(x, values, where)
        return x

    def inadmissible(self, values: np.ndarray) -> np.ndarray:
        """Mask ([rows, n_features]) of every value :meth:`admit` refuses, for callers that report all of
        them instead of stopping at the first (batch scoring): not finite in FP32 (NaN is missing, and
        admitted) or, in a categorical column, not one of its codes."""
        with np.errstate(over="ignore", invalid="ignore"):
            x = values.astype(np.float32, copy=False)
            bad = np.isinf(x)
            if len(self.top_code):
                codes = x[:, self.offset :]
                wrong = (codes < 0) | (codes > self.top_code) | (codes != np.floor(codes))
                bad[:, self.offset :] |= wrong & ~np.isnan(codes)
        return bad

    def _check_codes(self, x: np.ndarray, values: np.ndarray, where: str) -> np.ndarray:
        codes = x[:, self.offset :]
        missing = np.isnan(codes)
        if missing.any():  # a missing category is code 0, exactly what FeatureSpec.encode writes
            if not x.flags.writeable:  # a view of the request's bytes
                x = x.copy()
                codes = x[:, self.offset :]
            codes[missing] = 0.0
        bad = (codes < 0) | (codes > self.top_code) | (codes != np.floor(codes))
        if bad.any():
            row, j = (int(i) for i in np.argwhere(bad)[0])
            col = self.offset + j
            vocab = self.vocabularies[j]
            known = ", ".join(f"{k + 1}={v!r}" for k, v in enumerate(vocab[:6]))
            more = ", ..." if len(vocab) > 6 else ""
            raise InvalidInput(
                f"{where}: row {row}, feature {self.names[col]!r} (column {col}) is "
                f"{_show(values[row, col])}, which is not a code of this categorical feature; send an "
                f"integer from 0 (missing or unknown) to {len(vocab)} ({known}{more}; all codes are in "
                "the model metadata)",
            )
        return x


class RowEncoder:
    """Encodes named-feature rows exactly like :meth:`FeatureSpec.encode`, without pandas per request."""

    def __init__(self, spec: FeatureSpec):
        self.spec = spec
        self.numeric = spec.numeric
        self.known = frozenset(spec.names)
        self.not_inputs = spec.not_inputs
        """A data row's label, protected and ignored columns: dropped when a row carries them."""
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
                row = self._inputs_of(r, row)
            for i, name in enumerate(self.numeric):
                value = row[name]
                if value is None:
                    out[r, i] = math.nan
                elif isinstance(value, bool) or not isinstance(value, int | float):
                    raise InvalidInput(f"instance {r} feature {name!r} is {value!r}; it must be a number")
                else:
                    out[r, i] = value
            for j, (name, index) in enumerate(self.categorical):
                value = row[name]
                out[r, offset + j] = 0 if value is None else index.get(str(value), 0)
        return out

    def _inputs_of(self, r: int, row: dict[str, Any]) -> dict[str, Any]:
        """``row`` as it stands in the data without its non-input columns; refuses missing and unknown names."""
        names = list(self.spec.names)
        extra = [name for name in row if name not in self.known and name not in self.not_inputs]
        if extra:
            dropped = f"; {sorted(self.not_inputs)} may be sent and are ignored" if self.not_inputs else ""
            raise InvalidInput(
                f"instance {r} has unknown feature(s) {extra}; this model takes exactly {names}{dropped}"
            )
        missing = [name for name in names if name not in row]
        if missing:
            raise InvalidInput(
                f"instance {r} lacks feature(s) {missing}; send all of {names} (null for a missing value)"
            )
        return {name: row[name] for name in names}


def _show(value: object) -> str:
    """A value as the client wrote it: 3 for an integer, 3.5, 1e+300, inf."""
    number = float(value)  # type: ignore[arg-type]
    return str(int(number)) if number.is_integer() and abs(number) < 1e16 else repr(number)


def split_binary(body: bytes, header_length: str | None) -> tuple[bytes, bytes]:
    """The JSON header and the binary tensor section of a request (no header: all JSON, no binary)."""
    if header_length is None:
        return body, b""
    # isascii: str.isdigit() accepts digits int() refuses ('²'), which would end as a 500
    if not (header_length.isascii() and header_length.isdigit()) or int(header_length) > len(body):
        raise InvalidInput(
            f"Inference-Header-Content-Length is {header_length!r} but the body has {len(body)} bytes; "
            "it must be the byte length of the JSON header that starts the body",
        )
    cut = int(header_length)
    return body[:cut], body[cut:]


def binary_size(parameters: object, where: str) -> int | None:
    """The tensor's ``binary_data_size`` parameter, if it has one."""
    if parameters is None:
        return None
    if not isinstance(parameters, dict):
        raise InvalidInput(f"{where} 'parameters' must be an object, got {type(parameters).__name__}")
    size = parameters.get("binary_data_size")
    if size is None:
        return None
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise InvalidInput(f"{where} binary_data_size is {size!r}; it must be a byte count (>= 0)")
    return size


def from_binary(raw: bytes, datatype: str, rows: int, width: int, where: str) -> np.ndarray:
    """``rows x width`` values of ``datatype`` from raw little-endian bytes, as [rows, width]."""
    dtype = DTYPES[datatype]
    expected = rows * width * dtype.itemsize
    if len(raw) != expected:
        raise InvalidInput(
            f"{where} carries {len(raw)} bytes of binary data; shape [{rows}, {width}] of {datatype} "
            f"needs {expected} ({dtype.itemsize} bytes per value, little-endian, row-major)",
        )
    return np.frombuffer(raw, dtype=dtype).reshape(rows, width)
