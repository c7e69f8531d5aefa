"""``check_parity`` at, just inside and just outside its tolerance, on every row and on one row of many.

The torch side is a real TabularNet with zero weights (probability exactly 0.5); the
ONNX side adds a chosen offset per row, so each row's difference is exactly its offset.
"""

import math

import numpy as np
import pandas as pd
import pytest

from mlops.model.onnx_model import OnnxModelError
from tests.support.gate_inputs import numeric_spec
from tests.support.parity_stubs import OffsetOnnxScorer, half_probability_net
from training.onnx_export import check_parity

SPEC = numeric_spec("x", "y")
FRAME = pd.DataFrame({"x": np.arange(8.0), "y": np.zeros(8)})
TOLERANCE = 2.0**-12
# The smallest difference above the tolerance that 0.5 + difference represents exactly (0.5's ulp is 2^-53).
JUST_OVER = TOLERANCE + 2.0**-53


def below(value: float) -> float:
    return float(np.nextafter(value, -math.inf))


def onnx_off_by(offset: float, row: int | None = None) -> OffsetOnnxScorer:
    """ONNX output 0.5 + ``offset`` on ``row`` (every row when None), 0.5 elsewhere."""

    def offsets(x: np.ndarray) -> np.ndarray:
        out = np.zeros(len(x))
        if row is None:
            out[:] = offset
        else:
            out[x[:, 0] == row] = offset  # column x holds the row number
        return out

    return OffsetOnnxScorer(SPEC, offsets)


MODEL = half_probability_net(SPEC)


def test_every_row_exactly_at_the_tolerance_is_parity() -> None:
    report = check_parity(MODEL, onnx_off_by(TOLERANCE), FRAME, atol=TOLERANCE, rtol=0.0)
    assert report.ok
    assert report.max_abs_diff == TOLERANCE and report.n_rows == 8
    assert report.torch_value == 0.5 and report.onnx_value == 0.5 + TOLERANCE


def test_every_row_inside_the_tolerance_is_parity() -> None:
    assert check_parity(MODEL, onnx_off_by(below(TOLERANCE)), FRAME, atol=TOLERANCE, rtol=0.0).ok


def test_one_row_of_eight_just_beyond_the_tolerance_breaks_parity_and_is_located() -> None:
    report = check_parity(MODEL, onnx_off_by(JUST_OVER, row=5), FRAME, atol=TOLERANCE, rtol=0.0)
    assert not report.ok
    assert report.worst_row == 5 and report.max_abs_diff == JUST_OVER
    assert report.torch_value == 0.5 and report.onnx_value == 0.5 + JUST_OVER


def test_the_last_row_alone_beyond_the_tolerance_breaks_parity() -> None:
    report = check_parity(MODEL, onnx_off_by(JUST_OVER, row=7), FRAME, atol=TOLERANCE, rtol=0.0)
    assert not report.ok and report.worst_row == 7


def test_a_lower_onnx_probability_counts_by_its_size() -> None:
    report = check_parity(MODEL, onnx_off_by(-(2.0**-11), row=2), FRAME, atol=TOLERANCE, rtol=0.0)
    assert not report.ok and report.max_abs_diff == 2.0**-11 and report.worst_row == 2
    assert report.onnx_value == 0.5 - 2.0**-11


def test_relative_tolerance_scales_with_the_torch_probability() -> None:
    # atol 0, rtol 2^-11: allowed difference 2^-11 * 0.5 = 2^-12.
    assert check_parity(MODEL, onnx_off_by(TOLERANCE), FRAME, atol=0.0, rtol=2.0**-11).ok
    assert not check_parity(MODEL, onnx_off_by(JUST_OVER, row=3), FRAME, atol=0.0, rtol=2.0**-11).ok


def test_absolute_and_relative_tolerances_add_up() -> None:
    # allowed = 2^-13 + 2^-12 * 0.5 = 2^-12
    assert check_parity(MODEL, onnx_off_by(TOLERANCE), FRAME, atol=2.0**-13, rtol=2.0**-12).ok
    assert not check_parity(MODEL, onnx_off_by(JUST_OVER, row=0), FRAME, atol=2.0**-13, rtol=2.0**-12).ok


def test_a_nan_on_the_onnx_side_is_the_worst_mismatch() -> None:
    report = check_parity(MODEL, onnx_off_by(math.nan, row=4), FRAME, atol=1.0, rtol=1.0)
    assert not report.ok
    assert report.max_abs_diff == math.inf and report.worst_row == 4


def test_a_single_row_frame_is_compared() -> None:
    report = check_parity(MODEL, onnx_off_by(2.0**-11), FRAME.head(1), atol=TOLERANCE, rtol=0.0)
    assert not report.ok and report.n_rows == 1 and report.worst_row == 0


def test_bad_inputs_are_errors() -> None:
    with pytest.raises(ValueError, match="^parity needs at least one row; pass a non-empty frame$"):
        check_parity(MODEL, onnx_off_by(0.0), FRAME.head(0), atol=TOLERANCE, rtol=0.0)
    with pytest.raises(ValueError, match=r"tolerances must be >= 0, got atol=-1.0, rtol=0.0"):
        check_parity(MODEL, onnx_off_by(0.0), FRAME, atol=-1.0, rtol=0.0)
    with pytest.raises(ValueError, match=r"tolerances must be >= 0, got atol=0.0, rtol=-1.0"):
        check_parity(MODEL, onnx_off_by(0.0), FRAME, atol=0.0, rtol=-1.0)
    assert check_parity(MODEL, onnx_off_by(0.0), FRAME, atol=0.0, rtol=0.0).ok  # zero tolerances are allowed


def test_an_onnx_scorer_of_another_feature_spec_is_refused() -> None:
    other = OffsetOnnxScorer(numeric_spec("x", "z"), lambda x: np.zeros(len(x)))
    with pytest.raises(
        OnnxModelError,
        match=r"^stub.onnx carries a different feature spec than the torch model; it was exported "
        r"from another model, so parity is meaningless \(re-export this model\)$",
    ):
        check_parity(MODEL, other, FRAME, atol=TOLERANCE, rtol=0.0)


def test_an_onnx_output_of_another_shape_is_refused() -> None:
    wrong_shape = OffsetOnnxScorer(SPEC, lambda x: np.zeros((len(x), 2)))
    with pytest.raises(OnnxModelError, match=r"ONNX output shape \(8, 2\) differs from torch's \(8,\)"):
        check_parity(MODEL, wrong_shape, FRAME, atol=TOLERANCE, rtol=0.0)
