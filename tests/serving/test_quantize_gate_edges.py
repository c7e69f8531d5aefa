"""The INT8 gate's AUC-drop bound at, just inside and just outside the limit, on hand-built scores.

Four rows with labels 0, 0, 1, 1 give AUCs in quarters: the FP32 scores rank perfectly
(AUC 1.0), and each swapped pair in the INT8 scores costs exactly 0.25.
"""

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError

from serving.quantize import ParityResult, QuantizeConfig, compare, quantize_with_gate

LABELS = np.array([0, 0, 1, 1])
FP32 = np.array([0.125, 0.25, 0.75, 0.875])  # AUC 1.0
INT8 = np.array([0.125, 0.75, 0.25, 0.875])  # one positive below one negative: AUC 0.75
DROP = 0.25


def below(value: float) -> float:
    return float(np.nextafter(value, -math.inf))


def above(value: float) -> float:
    return float(np.nextafter(value, math.inf))


def test_an_auc_drop_exactly_at_the_bound_passes() -> None:
    result = compare(LABELS, FP32, INT8, max_auc_drop=DROP)
    assert (result.auc_fp32, result.auc_int8, result.auc_drop) == (1.0, 0.75, DROP)
    assert result.passed
    assert result.message() == (
        "INT8 AUC 0.75000 vs FP32 1.00000 on 4 held-out rows: drop 0.25000 within the bound 0.25000 "
        "(max |probability diff| 0.5000)"
    )


def test_an_auc_drop_inside_the_bound_passes() -> None:
    assert compare(LABELS, FP32, INT8, max_auc_drop=above(DROP)).passed


def test_an_auc_drop_just_over_the_bound_fails_naming_both_aucs_and_the_bound() -> None:
    bound = below(DROP)
    result = compare(LABELS, FP32, INT8, max_auc_drop=bound)
    assert not result.passed
    assert result.max_auc_drop == bound
    assert "drop 0.25000 exceeds the bound 0.25000" in result.message()
    assert result.message().startswith("INT8 AUC 0.75000 vs FP32 1.00000 on 4 held-out rows")


def test_an_int8_model_better_than_fp32_passes_a_zero_bound() -> None:
    result = compare(LABELS, INT8, FP32, max_auc_drop=0.0)
    assert result.auc_drop == -DROP and result.passed


def test_identical_scores_pass_a_zero_bound() -> None:
    result = compare(LABELS, FP32, FP32.copy(), max_auc_drop=0.0)
    assert result.passed and result.max_abs_diff == 0.0 and result.n_rows == 4


def test_the_largest_probability_difference_is_over_every_row() -> None:
    int8 = FP32 + np.array([0.0, 0.0, -0.0625, 0.0])  # one row of four moved, ranking kept
    result = compare(LABELS, FP32, int8, max_auc_drop=0.0)
    assert result.max_abs_diff == 0.0625 and result.auc_drop == 0.0


def test_parity_result_judges_its_own_figures() -> None:
    assert ParityResult(0.875, 0.75, 0.1, 10, 0.125).passed
    assert not ParityResult(0.875, 0.75, 0.1, 10, below(0.125)).passed


def test_compare_needs_both_classes_and_one_score_per_label() -> None:
    with pytest.raises(ValueError, match=r"needs held-out rows with both classes; the labels hold \[1\]"):
        compare(np.ones(4, dtype=int), FP32, INT8, 0.1)
    with pytest.raises(ValueError, match="4 labels but 3 / 4 scores"):
        compare(LABELS, FP32[:3], INT8, 0.1)
    with pytest.raises(ValueError, match="4 labels but 4 / 3 scores"):
        compare(LABELS, FP32, INT8[:3], 0.1)


def test_the_gate_needs_the_label_column(tmp_path: Path) -> None:
    holdout = pd.DataFrame({"x": [1.0]})
    with pytest.raises(ValueError, match=r"held-out data has no label column 'default'; columns are \['x'\]"):
        quantize_with_gate(tmp_path / "m.onnx", tmp_path / "q.onnx", holdout, "default", QuantizeConfig())


@pytest.mark.parametrize("bound", [-0.001, 1.001])
def test_config_refuses_a_bound_outside_zero_one(bound: float) -> None:
    with pytest.raises(ValidationError, match="max_auc_drop"):
        QuantizeConfig(max_auc_drop=bound)
