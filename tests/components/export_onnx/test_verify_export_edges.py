"""The export step's parity gate: the whole batch and the first row alone, each within the tolerance.

``OnnxScorer.load`` is replaced by a stand-in whose difference from the zero-weight
torch model is exact per row and may depend on the batch size, as a dynamic-batch
export bug would.
"""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import mlops.data.dataset
import training.model
import training.onnx_export
from components.export_onnx.verified_export import ParityError, run_export, verify_export
from mlops.data.dataset import DatasetError
from mlops.model.onnx_model import OnnxScorer
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


@pytest.mark.parametrize("tolerance", [0.0, 1.0, 1, -1e-4, float("nan"), float("inf"), "1e-4", None])
def test_unusable_tolerances_are_refused_before_any_work(tolerance: object, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"is not a usable probability difference; pass a value in \(0, 1\)"):
        run_export(tmp_path / "no-model", tmp_path / "no-data.csv", tmp_path / "out", tolerance)  # type: ignore[arg-type]


def test_the_failure_says_what_to_do_and_the_file_checked_is_the_one_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    opened: list[Path] = []
    stub = OffsetOnnxScorer(SPEC, lambda x: np.full(len(x), JUST_OVER))
    monkeypatch.setattr(
        OnnxScorer, "load", classmethod(lambda cls, path, intra_op_threads=1: opened.append(path) or stub)
    )
    with pytest.raises(ParityError) as raised:
        verify_export(MODEL, Path("exported/model.onnx"), FRAME, TOLERANCE)
    assert opened == [Path("exported/model.onnx")]
    assert str(raised.value).endswith(
        "The export is not faithful; check for ops the exporter translated differently, "
        "or raise export.tolerance only if the difference is acceptable."
    )


# --- run_export: export, check, and remove the files when the check fails ---


def _stub_export(monkeypatch: pytest.MonkeyPatch, frame: pd.DataFrame, offset: float) -> list[int]:
    """Replace model loading, data loading, export and ONNX loading; return the row counts scored."""
    scored_rows: list[int] = []

    def offsets(x: np.ndarray) -> np.ndarray:
        scored_rows.append(len(x))
        return np.full(len(x), offset)

    def fake_export(model: object, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"onnx")
        path.with_name(path.name + ".data").write_bytes(b"weights")
        return path

    monkeypatch.setattr(training.model, "load_model", lambda directory: MODEL)
    monkeypatch.setattr(mlops.data.dataset, "load_table", lambda uri: (frame, "sha256"))
    monkeypatch.setattr(training.onnx_export, "export_onnx", fake_export)
    stub = OffsetOnnxScorer(SPEC, offsets)
    monkeypatch.setattr(OnnxScorer, "load", classmethod(lambda cls, path, intra_op_threads=1: stub))
    return scored_rows


def test_run_export_keeps_a_faithful_export_and_checks_the_first_512_rows(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    big = pd.DataFrame({"x": np.arange(600.0), "y": np.zeros(600)})
    scored_rows = _stub_export(monkeypatch, big, offset=TOLERANCE)
    report = run_export(tmp_path / "model", tmp_path / "data.csv", tmp_path / "out", TOLERANCE)
    assert report.ok and report.n_rows == 512 and report.max_abs_diff == TOLERANCE
    assert scored_rows == [512, 1]
    assert (tmp_path / "out" / "model.onnx").read_bytes() == b"onnx"


def test_run_export_removes_both_files_when_parity_fails(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _stub_export(monkeypatch, FRAME, offset=JUST_OVER)
    with pytest.raises(ParityError, match="batch check of 8 row"):
        run_export(tmp_path / "model", tmp_path / "data.csv", tmp_path / "out", TOLERANCE)
    assert list((tmp_path / "out").iterdir()) == []


def test_run_export_refuses_empty_sample_data(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _stub_export(monkeypatch, FRAME.head(0), offset=0.0)
    with pytest.raises(DatasetError, match=r"has no rows; parity needs at least one row$"):
        run_export(tmp_path / "model", tmp_path / "data.csv", tmp_path / "out", TOLERANCE)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("tolerance", [2.0**-30, 1 - 2.0**-30])
def test_run_export_accepts_tolerances_just_inside_zero_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, tolerance: float
) -> None:
    _stub_export(monkeypatch, FRAME, offset=0.0)
    assert run_export(tmp_path / "model", tmp_path / "data.csv", tmp_path / "out", tolerance).ok
