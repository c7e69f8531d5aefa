"""Raw rows of a chunk → the model's input matrix, with every row the model cannot take named.

The encoding is :meth:`mlops.data.features.FeatureSpec.encode` done column-wise in Arrow
(numerics as numbers, NaN for missing; categoricals as codes, 0 for missing or unseen), and
the checks are serving's: a numeric feature must hold numbers (the server refuses
``"abc"`` for a number), and every value must pass
:meth:`serving.tensors.FeatureBounds.inadmissible` (finite in FP32, valid codes), the rule
:meth:`~serving.tensors.FeatureBounds.admit` applies to every request. Unlike a request,
a chunk is not refused at the first bad value: every bad row is listed, with its row
number in the file, the column, the value and why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pyarrow as pa

    from mlops.data.features import FeatureSpec
    from serving.tensors import FeatureBounds

NOT_A_NUMBER = "not a number; the feature is numeric"
NOT_FP32 = "not a finite FP32 number (the model's input type, at most ±3.4e38)"


@dataclass(frozen=True)
class BadValue:
    """One value the model cannot take."""

    row: int
    """Row number in its file (0-based, header not counted)."""
    column: str
    value: str
    reason: str

    def describe(self) -> str:
        return f"row {self.row}, column {self.column!r}: {self.value!r} is {self.reason}"


@dataclass
class EncodedChunk:
    x: np.ndarray
    """float32 [good rows, n_features], what the model scores."""
    good: np.ndarray | None
    """Mask of the chunk's rows that are in ``x``; None when all are."""
    bad: list[BadValue]
    """Every bad value (a row may have several); empty when all rows are good."""

    @property
    def bad_rows(self) -> int:
        return 0 if self.good is None else int(np.count_nonzero(~self.good))


def encode_chunk(
    table: pa.Table, spec: FeatureSpec, bounds: FeatureBounds, first_row: int, missing: tuple[str, ...] = ()
) -> EncodedChunk:
    """Encode ``table`` (raw columns, at least the features); rows are numbered from ``first_row``."""
    n = table.num_rows
    x = np.empty((n, spec.n_features), dtype=np.float32)  # numbers beyond FP32 become ±inf: refused below
    bad: list[BadValue] = []
    with np.errstate(over="ignore"):
        for i, name in enumerate(spec.numeric):
            x[:, i], rows = _numeric(table.column(name), missing)
            for r in rows:
                bad.append(
                    BadValue(first_row + int(r), name, _text(table.column(name)[int(r)]), NOT_A_NUMBER)
                )
    offset = len(spec.numeric)
    for j, (name, vocab) in enumerate(zip(spec.categorical, spec.vocabularies, strict=True)):
        x[:, offset + j] = _codes(table.column(name), vocab, missing)
    refused = bounds.inadmissible(x)
    if refused.any():
        for r, c in np.argwhere(refused):
            raw = table.column(spec.names[c])[int(r)] if c < offset else x[r, c]  # the value as given
            bad.append(BadValue(first_row + int(r), spec.names[c], _text(raw), NOT_FP32))
    if not bad:
        return EncodedChunk(x, None, [])
    good = np.ones(n, dtype=bool)
    good[[b.row - first_row for b in bad]] = False
    bad.sort(key=lambda b: (b.row, b.column))
    return EncodedChunk(x[good], good, bad)


def _numeric(column: pa.ChunkedArray, missing: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The column as float64 (NaN for missing) and the rows whose value is not a number."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = column.type
    if pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_decimal(kind):
        values = pc.cast(column, pa.float64()).to_numpy(zero_copy_only=False)
        return np.asarray(values, dtype=np.float64), np.empty(0, dtype=np.int64)
    text = pc.cast(column, pa.string())
    if missing:
        text = pc.if_else(pc.is_in(text, value_set=pa.array(missing, pa.string())), None, text)
    text = pc.utf8_trim_whitespace(text)
    text = pc.if_else(pc.equal(text, ""), None, text)
    try:
        return np.asarray(
            pc.cast(text, pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64
        ), np.empty(0, dtype=np.int64)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    import pandas as pd

    raw = text.to_pandas()
    parsed = pd.to_numeric(raw, errors="coerce")
    if pa.types.is_boolean(kind):  # serving refuses true/false for a number too
        parsed[:] = np.nan
    wrong = np.flatnonzero(parsed.isna().to_numpy() & raw.notna().to_numpy())
    return parsed.to_numpy(dtype=np.float64, na_value=np.nan), wrong


def _codes(column: pa.ChunkedArray, vocab: tuple[str, ...], missing: tuple[str, ...]) -> np.ndarray:
    """Codes as :meth:`FeatureSpec.encode` gives them: value i of the vocabulary is i + 1; 0 = missing or unseen."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = column.type
    if pa.types.is_dictionary(kind) and (
        pa.types.is_string(kind.value_type) or pa.types.is_large_string(kind.value_type)
    ):  # the few distinct values are mapped, then every row takes its value's code
        parts = [np.zeros(0, dtype=np.float64)]
        for chunk in column.chunks:
            known = np.append(_codes(pa.chunked_array([chunk.dictionary]), vocab, missing), 0.0)
            parts.append(known[pc.fill_null(chunk.indices, -1).to_numpy(zero_copy_only=False)])  # null: 0
        return np.concatenate(parts)
    if pa.types.is_dictionary(kind):
        column = pc.cast(column, kind.value_type)
        kind = kind.value_type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        if missing:
            column = pc.if_else(pc.is_in(column, value_set=pa.array(missing, kind)), None, column)
        index = pc.index_in(column, value_set=pa.array(vocab, kind))
        return np.asarray(pc.fill_null(index, -1).to_numpy(zero_copy_only=False), dtype=np.float64) + 1.0
    # Numbers or booleans in a categorical column: str() of each value, exactly as FeatureSpec.encode does.
    lookup = {value: code + 1 for code, value in enumerate(vocab)}
    blank = set(missing)
    return np.array(
        [0 if v is None or v != v or str(v) in blank else lookup.get(str(v), 0) for v in column.to_pylist()],
        dtype=np.float64,
    )


def _text(value: object) -> str:
    scalar = value.as_py() if hasattr(value, "as_py") else value
    if isinstance(scalar, float | np.floating):
        number = float(scalar)
        return str(int(number)) if number.is_integer() and abs(number) < 1e16 else repr(number)
    return str(scalar)
