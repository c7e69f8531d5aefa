"""Cell texts computed once per distinct value are the per-cell texts, so every row keeps its split."""

from __future__ import annotations

import hashlib

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


def test_a_numpy_scalar_has_the_text_of_its_python_value() -> None:
    assert [cell_text(np.float64(3.5)), cell_text(np.int64(3)), cell_text(np.float32(0.5))] == [
        "3.5",
        "3",
        "0.5",
    ]
    assert cell_text(np.float64("nan")) == "" and cell_text(np.bool_(True)) == "True"


@pytest.mark.parametrize("column", list(ODD.columns))
def test_column_texts_are_cell_text_of_each_cell(column: str) -> None:
    assert list(column_texts(ODD[column])) == [cell_text(v) for v in ODD[column]]


def test_positions_do_not_depend_on_the_chunk_size(monkeypatch: pytest.MonkeyPatch) -> None:
    rule = SplitRule(tuple(sorted(ODD.columns)), 0.2, 0.2)
    whole = rule.positions(ODD)
    monkeypatch.setattr(row_split, "CHUNK_ROWS", 5)
    assert (rule.positions(ODD) == whole).all()
    assert len(set(whole.tolist())) == 4  # the rows repeat every 4: equal rows, equal places


def test_positions_are_the_recorded_formula_row_by_row() -> None:
    """A version's recorded rule must place today's rows where its run placed them: the salted BLAKE2b of
    the row's cell texts joined by U+001F, its first 8 bytes as a big-endian integer over 2**64."""
    rng = np.random.default_rng(3)
    frame = pd.concat([ODD] * 50, ignore_index=True).assign(
        noise=rng.normal(size=600), word=rng.choice(["é", "ß", "x y", ""], size=600)
    )
    rule = SplitRule(tuple(sorted(frame.columns)), 0.2, 0.2)
    expected = [
        int.from_bytes(
            hashlib.blake2b(
                row_split.SALT + "\x1f".join(cell_text(frame.at[i, c]) for c in rule.key_columns).encode(),
                digest_size=8,
            ).digest(),
            "big",
        )
        / 2.0**64
        for i in range(len(frame))
    ]
    assert rule.positions(frame).tolist() == expected
    assert max(expected) > 0.5  # integers of 2**63 and above converted too
