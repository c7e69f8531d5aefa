"""Cell texts computed once per distinct value are the per-cell texts, so every row keeps its split."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from training import row_split
from training.row_split import SplitRule, cell_text, column_texts

ODD = pd.DataFrame(
    {
        "ints": [1, 2, None, 4] * 3,
        "floats": [1.0, np.nan, 3.5, 2.25] * 3,
        "text": pd.Series(["x", None, " 3.0", "nan"] * 3, dtype="str"),
        "mixed": pd.Series([True, 1, "1", None] * 3, dtype=object),
        "nullable": pd.Series([1, None, 3, 4] * 3, dtype="Int64"),
        "category": pd.Series(["a", "b", None, "a"] * 3, dtype="category"),
        "flags": [True, False, True, True] * 3,
    }
)


@pytest.mark.parametrize("column", list(ODD.columns))
def test_column_texts_are_cell_text_of_each_cell(column: str) -> None:
    assert list(column_texts(ODD[column])) == [cell_text(v) for v in ODD[column]]


def test_positions_do_not_depend_on_the_chunk_size(monkeypatch: pytest.MonkeyPatch) -> None:
    rule = SplitRule(tuple(sorted(ODD.columns)), 0.2, 0.2)
    whole = rule.positions(ODD)
    monkeypatch.setattr(row_split, "CHUNK_ROWS", 5)
    assert (rule.positions(ODD) == whole).all()
    assert len(set(whole.tolist())) == 4  # the rows repeat every 4: equal rows, equal places
