"""Category codes looked up once per distinct value are the per-cell lookups the model was trained on."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mlops.data.features import category_codes

VOCABULARY = ("1.0", "True", "a", "b")


@pytest.mark.parametrize(
    "series",
    [
        pd.Series(["a", "b", None, "zz"] * 3, dtype="str"),
        pd.Series([1.0, np.nan, 2.0, 3.0] * 3),
        pd.Series([True, 1, "1", None, float("nan")] * 3, dtype=object),
        pd.Series(["a", None, "b", "a"] * 3, dtype="category"),
        pd.Series([True, False] * 6),
    ],
)
def test_codes_are_the_per_cell_lookup(series: pd.Series) -> None:
    index = {v: k + 1 for k, v in enumerate(VOCABULARY)}
    per_cell = [index.get(str(v), 0) if v is not None and v == v else 0 for v in series]
    codes = category_codes(series, VOCABULARY)
    assert codes.dtype == np.float32
    assert codes.tolist() == per_cell
