"""What the generators of tests/serving/test_generated_requests.py know, and the rules they judge by.

The model's contract (its spec, read from the ONNX file like any client could), a generated request with
the answer it must get, the values a client can send (numbers at the extremes, categorical codes and
strings in and out of the vocabulary, data-table columns), and the documented rules alone (not the
server's code) that turn them into the encoded matrix ONNX Runtime scores, or into a refusal. The
generators of each door are in generated_door_requests.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

from mlops.data.features import FeatureSpec

FP32_MAX = float(np.finfo(np.float32).max)


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
