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

import components.quantize.quantizer
from components.quantize.quantizer import (
    ParityResult,
    QuantizationRejected,
    QuantizeConfig,
    compare,
    quantize_with_gate,
)
from mlops.model.onnx_model import OnnxScorer
from tests.support.gate_inputs import numeric_spec
from tests.support.parity_stubs import OffsetOnnxScorer

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


# --- quantize_with_gate: keep the INT8 file only when the gate passes ---


def _stub_quantization(monkeypatch: pytest.MonkeyPatch, int8_scores: np.ndarray) -> list[tuple[Path, Path]]:
    """FP32 and INT8 models as stand-ins scoring FP32 / ``int8_scores``; return the quantise calls."""
    spec = numeric_spec("x")
    scorers = {
        "fp32.onnx": OffsetOnnxScorer(spec, lambda x: FP32 - 0.5),
        "int8.onnx": OffsetOnnxScorer(spec, lambda x: int8_scores - 0.5),
    }
    calls: list[tuple[Path, Path]] = []

    def fake_quantize(fp32_path: Path, out_path: Path, config: QuantizeConfig) -> Path:
        calls.append((fp32_path, out_path))
        out_path.write_bytes(b"int8")
        return out_path

    monkeypatch.setattr(components.quantize.quantizer, "quantize_onnx", fake_quantize)
    monkeypatch.setattr(
        OnnxScorer, "load", classmethod(lambda cls, path, intra_op_threads=1: scorers[path.name])
    )
    return calls


HOLDOUT = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0], "default": LABELS})


def test_the_gate_keeps_an_int8_model_whose_drop_is_exactly_the_bound(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls = _stub_quantization(monkeypatch, INT8)
    fp32, int8 = tmp_path / "fp32.onnx", tmp_path / "int8.onnx"
    result = quantize_with_gate(fp32, int8, HOLDOUT, "default", QuantizeConfig(max_auc_drop=DROP))
    assert calls == [(fp32, int8)]
    assert result.passed and result.auc_drop == DROP and result.max_auc_drop == DROP and result.n_rows == 4
    assert int8.read_bytes() == b"int8"


def test_the_gate_removes_an_int8_model_just_over_the_bound_and_says_why(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _stub_quantization(monkeypatch, INT8)
    int8 = tmp_path / "int8.onnx"
    with pytest.raises(QuantizationRejected) as rejected:
        quantize_with_gate(
            tmp_path / "fp32.onnx", int8, HOLDOUT, "default", QuantizeConfig(max_auc_drop=below(DROP))
        )
    assert not int8.exists()
    assert rejected.value.result.auc_int8 == 0.75 and not rejected.value.result.passed
    assert str(rejected.value) == (
        f"refusing the INT8 model: {rejected.value.result.message()}. Keep serving FP32, or raise max_auc_drop "
        "if that loss is acceptable."
    )
