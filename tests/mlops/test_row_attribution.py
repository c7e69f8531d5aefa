"""The row attribution every reason is computed with: exact values on a linear scorer, one call per batch,
the same numbers row by row as in a batch, the texts and the reference file round trip."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mlops.model.row_attribution import (
    attribute,
    choose_reference_rows,
    default_text,
    read_reference,
    reason_text,
    reasons,
    reference_table,
)

WEIGHTS = np.array([8.0, 4.0, 2.0, 1.0], dtype=np.float32)
FEATURES = ("a", "b", "c", "d")


def linear(x: np.ndarray) -> np.ndarray:
    """Each row's score from that row alone, exactly (no BLAS kernel whose rounding depends on the batch)."""
    return ((x * WEIGHTS).sum(axis=1) / 256).astype(np.float32)


def test_a_contribution_is_own_score_minus_the_mean_with_the_feature_from_the_references() -> None:
    rows = np.array([[4, 0, 1, 3]], dtype=np.float32)
    references = np.array([[0, 2, 1, 5], [2, 2, 1, 7]], dtype=np.float32)
    found = attribute(linear, rows, references, FEATURES)
    assert found.scores[0] == pytest.approx((4 * 8 + 1 * 2 + 3) / 256)
    assert dict(found.ranked(0)) == pytest.approx(
        {"a": 8 * (4 - 1) / 256, "b": 4 * (0 - 2) / 256, "c": 0.0, "d": 1 * (3 - 6) / 256}
    )
    assert [name for name, _ in found.ranked(0)] == ["a", "b", "d", "c"]  # largest |c| first


def test_many_rows_take_one_call_and_give_what_each_row_alone_gives() -> None:
    rng = np.random.default_rng(0)
    rows, references = rng.normal(size=(7, 4)).astype(np.float32), rng.normal(size=(5, 4)).astype(np.float32)
    calls: list[int] = []

    def counting(x: np.ndarray) -> np.ndarray:
        calls.append(len(x))
        return linear(x)

    together = attribute(counting, rows, references, FEATURES)
    assert calls == [7 * (1 + 4 * 5)]
    for i in range(7):
        alone = attribute(linear, rows[i : i + 1], references, FEATURES)
        assert np.array_equal(alone.contributions[0], together.contributions[i])
        assert np.array_equal(alone.order[0], together.order[i])


def test_ties_keep_feature_order_and_bad_shapes_are_refused() -> None:
    rows = np.zeros((1, 4), dtype=np.float32)
    found = attribute(linear, rows, np.zeros((3, 4), dtype=np.float32), FEATURES)
    assert [name for name, _ in found.ranked(0)] == list(FEATURES)
    with pytest.raises(ValueError, match="same width"):
        attribute(linear, rows, np.zeros((3, 3), dtype=np.float32), FEATURES)
    with pytest.raises(ValueError, match="no reference rows"):
        attribute(linear, rows, np.zeros((0, 4), dtype=np.float32), FEATURES)
    with pytest.raises(ValueError, match="3 feature names"):
        attribute(linear, rows, np.zeros((2, 4), dtype=np.float32), FEATURES[:3])


def test_reasons_use_the_declared_text_else_feature_equals_value() -> None:
    found = attribute(
        linear, np.array([[4, 0, 1, np.nan]], dtype=np.float32), np.ones((2, 4), np.float32), FEATURES
    )
    got = reasons(found, [[4.0, 0.0, 1.0, None]], {"a": "Income too low"}, top_k=2)
    assert [r["text"] for r in got[0]] == ["Income too low", "b = 0"]
    assert set(got[0][0]) == {"feature", "value", "contribution", "text"}
    assert default_text("region", None) == "region = missing"
    assert default_text("age", 41.5) == "age = 41.5"
    assert reason_text({"age": ""}, "age", 41.0) == "age = 41"


def test_the_reference_choice_is_stable_whatever_the_row_order() -> None:
    frame = pd.DataFrame({"a": range(100), "b": [str(i % 7) for i in range(100)], "id": range(100, 200)})
    chosen = choose_reference_rows(frame, 10, ["a", "b"])
    shuffled = choose_reference_rows(frame.sample(frac=1, random_state=3), 10, ["a", "b"])
    assert sorted(chosen["id"]) == sorted(shuffled["id"])
    assert len(chosen) == 10
    assert choose_reference_rows(frame, 0, ["a"]).empty
    assert len(choose_reference_rows(frame, 500, ["a"])) == 100


def test_the_reference_file_keeps_rows_subject_key_and_texts() -> None:
    frame = pd.DataFrame({"a": [1.0, None], "b": ["x", None], "customer_id": ["c1", "c2"]})
    rows, texts = read_reference(reference_table(frame, {"a": "A too high"}), "test")
    assert rows["customer_id"].tolist() == ["c1", "c2"]
    assert rows["a"].isna().tolist() == [False, True]
    assert texts == {"a": "A too high"}
    with pytest.raises(ValueError, match="not a readable"):
        read_reference(b"not parquet", "test")
