"""FeatureBounds (the strict numeric check) and the binary tensor helpers, in-process."""

from __future__ import annotations

import re

import numpy as np
import pytest

from mlops.data.features import FeatureSpec
from serving.errors import InvalidInput, http_status
from serving.tensors import FeatureBounds, from_binary, split_binary

SPEC = FeatureSpec(
    numeric=("age", "income"),
    medians=(40.0, 1.0),
    means=(40.0, 1.0),
    stds=(10.0, 1.0),
    categorical=("region",),
    vocabularies=(("east", "north", "west"),),
)
BOUNDS = FeatureBounds(SPEC)


def test_admit_converts_to_float32_keeps_missing_numerics_and_maps_missing_codes_to_zero() -> None:
    x = BOUNDS.admit(np.array([[41, np.nan, 3], [1e30, 2.5, np.nan]]), "input")
    assert x.dtype == np.float32
    assert np.isnan(x[0, 1]) and x[1, 2] == 0.0 and x[0, 2] == 3.0 and x[1, 0] == np.float32(1e30)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ([[1e300, 1, 1]], "row 0, feature 'age' (column 0) is 1e+300, which is not a finite FP32"),
        ([[1, 3.5e38, 1]], "feature 'income' (column 1) is 3.5e+38"),
        ([[1, -np.inf, 1]], "feature 'income' (column 1) is -inf"),
        ([[1, 1, 1], [1, 1, -7]], "row 1, feature 'region' (column 2) is -7, which is not a code"),
        ([[1, 1, 4]], "is 4, which is not a code of this categorical feature; send an integer from 0"),
        ([[1, 1, 2.5]], "is 2.5, which is not a code"),
        ([[1, 1, np.inf]], "feature 'region' (column 2) is inf"),
    ],
)
def test_admit_refuses_values_the_model_cannot_take(values: list[list[float]], message: str) -> None:
    with pytest.raises(InvalidInput, match=re.escape(message)) as info:
        BOUNDS.admit(np.array(values, dtype=np.float64), "input 'features'")
    assert http_status(info.value) == 400 and info.value.message.startswith("input 'features': row ")


def test_admit_leaves_read_only_request_bytes_alone() -> None:
    raw = np.array([[1, 2, np.nan]], dtype="<f4").tobytes()
    values = from_binary(raw, "FP32", 1, 3, "input")
    x = BOUNDS.admit(values, "input")
    assert x[0, 2] == 0.0 and np.isnan(values[0, 2])


def test_split_binary_and_from_binary_check_sizes() -> None:
    assert split_binary(b'{"a":1}rest', "7") == (b'{"a":1}', b"rest")
    assert split_binary(b"{}", None) == (b"{}", b"")
    with pytest.raises(InvalidInput, match="is '99' but the body has 2 bytes"):
        split_binary(b"{}", "99")
    with pytest.raises(
        InvalidInput, match="carries 8 bytes of binary data; shape \\[1, 3\\] of FP64 needs 24"
    ):
        from_binary(b"\0" * 8, "FP64", 1, 3, "input 'features'")


@pytest.mark.parametrize(
    ("datatype", "surplus"), [("FP32", 4), ("FP32", 1), ("FP64", 8), ("FP64", 3)], ids=str
)
def test_surplus_bytes_after_a_binary_tensor_are_a_400_naming_the_sizes(datatype: str, surplus: int) -> None:
    """A planted fault: bytes beyond [rows, width] reached numpy's reshape and answered 500."""
    values = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=f"<f{8 if datatype == 'FP64' else 4}")
    raw = values.tobytes()
    assert np.array_equal(from_binary(raw, datatype, 2, 3, "input 'features'"), values)  # exact size: read
    with pytest.raises(InvalidInput) as refused:
        from_binary(raw + b"\x01" * surplus, datatype, 2, 3, "input 'features'")
    assert http_status(refused.value) == 400
    assert refused.value.message.startswith(
        f"input 'features' carries {len(raw) + surplus} bytes of binary data; shape [2, 3] of {datatype} "
        f"needs {len(raw)}"
    )
