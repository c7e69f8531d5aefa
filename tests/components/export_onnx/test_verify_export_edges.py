"""The export step's parity gate: the whole batch and the first row alone, each within the tolerance.

``OnnxScorer.load`` is replaced by a stand-in whose difference from the zero-weight
torch model is exact per row and may depend on the batch size, as a dynamic-batch
export bug would.
"""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from components.export_onnx.core import ParityError, run_export, verify_export
from mlops.onnx_model import OnnxScorer
from tests.support.gate_inputs import numeric_spec
from tests.support.parity_stubs import OffsetOnnxScorer, half_probability_net

SPEC = numeric_spec("x", "y")
FRAME = pd.DataFrame({"x": np.arange(8.0), "y": np.zeros(8)})
MODEL = half_probability_net(SPEC)
TOLERANCE = 2.0**-12
JUST_OVER = TOLERANCE + 2.0**-53  # 0.5 + JUST_OVER is exact: 0.5's ulp is 2^-53


def serve(
    monkeypatch: pytest.MonkeyPatch, batch_offset: float, single_offset: float, row: int | None = None
) -> None:
    """Make ``OnnxScorer.load`` return a scorer off by ``batch_offset`` on batches, ``single_offset`` on one row."""

    def offsets(x: np.ndarray) -> np.ndarray:
        out = np.zeros(len(x))
        if len(x) == 1:
            out[:] = single_offset
        elif row is None:
            out[:] = batch_offset
        else:
            out[x[:, 0] == row] = batch_offset
        return out

    stub = OffsetOnnxScorer(SPEC, offsets)
    monkeypatch.setattr(OnnxScorer, "load", classmethod(lambda cls, path, intra_op_threads=1: stub))


def test_both_checks_exactly_at_the_tolerance_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    serve(monkeypatch, batch_offset=TOLERANCE, single_offset=TOLERANCE)
    report = verify_export(MODEL, Path("model.onnx"), FRAME, TOLERANCE)
    assert report.ok and report.max_abs_diff == TOLERANCE


def test_one_row_of_the_batch_just_over_the_tolerance_fails_the_batch_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    serve(monkeypatch, batch_offset=JUST_OVER, single_offset=0.0, row=6)
    with pytest.raises(
        ParityError,
        match=r"on the batch check of 8 row\(s\): max abs diff 0.000244 exceeds tolerance 0.000244141 at row 6 \(torch 0.500000, onnx 0.500244\)",
    ):
        verify_export(MODEL, Path("model.onnx"), FRAME, TOLERANCE)


def test_a_single_row_just_over_the_tolerance_fails_even_when_the_batch_agrees(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    serve(monkeypatch, batch_offset=0.0, single_offset=JUST_OVER)
    with pytest.raises(ParityError, match=r"on the single-row check of 1 row\(s\)"):
        verify_export(MODEL, Path("model.onnx"), FRAME, TOLERANCE)


def test_a_single_row_off_by_ten_times_the_tolerance_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    serve(monkeypatch, batch_offset=0.0, single_offset=9 * TOLERANCE)
    with pytest.raises(ParityError, match="single-row"):
        verify_export(MODEL, Path("model.onnx"), FRAME, TOLERANCE)


def test_the_worse_of_the_two_reports_is_returned(monkeypatch: pytest.MonkeyPatch) -> None:
    serve(monkeypatch, batch_offset=2.0**-14, single_offset=2.0**-13)
    single_worse = verify_export(MODEL, Path("model.onnx"), FRAME, TOLERANCE)
    assert single_worse.n_rows == 1 and single_worse.max_abs_diff == 2.0**-13
    serve(monkeypatch, batch_offset=2.0**-13, single_offset=2.0**-14)
    batch_worse = verify_export(MODEL, Path("model.onnx"), FRAME, TOLERANCE)
    assert batch_worse.n_rows == 8 and batch_worse.max_abs_diff == 2.0**-13
    serve(monkeypatch, batch_offset=2.0**-13, single_offset=2.0**-13)
    assert verify_export(MODEL, Path("model.onnx"), FRAME, TOLERANCE).n_rows == 8  # a tie reports the batch


def test_the_tolerance_is_absolute_not_relative(monkeypatch: pytest.MonkeyPatch) -> None:
    # A relative term would allow 0.5 * tolerance more on these rows.
    serve(monkeypatch, batch_offset=TOLERANCE + 2.0**-14, single_offset=0.0)
    with pytest.raises(ParityError, match="batch check"):
        verify_export(MODEL, Path("model.onnx"), FRAME, TOLERANCE)


@pytest.mark.parametrize("tolerance", [0.0, 1.0, -1e-4, float("nan"), float("inf"), "1e-4", None])
def test_unusable_tolerances_are_refused_before_any_work(tolerance: object, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"is not a usable probability difference; pass a value in \(0, 1\)"):
        run_export(tmp_path / "no-model", tmp_path / "no-data.csv", tmp_path / "out", tolerance)  # type: ignore[arg-type]
