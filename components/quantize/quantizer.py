"""INT8 dynamic quantisation behind an accuracy-parity gate.

torch 2.13's dynamo exporter writes graphs whose value-info shapes
``quantize_dynamic`` cannot reconcile (``ShapeInferenceError ... (10) vs (256)``);
ONNX Runtime's ``quant_pre_process`` (symbolic shape inference + optimisation)
first makes them quantisable. Weights become INT8; activations are quantised on
the fly per batch, so no calibration data is needed.

A quantised model is a different model: it may only be registered (and so served)
when its ROC AUC on held-out labelled rows is at most ``max_auc_drop`` below the
FP32 model's on the same rows. The FeatureSpec metadata survives both steps, so the
server loads an INT8 file exactly like an FP32 one.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd


class QuantizeConfig(BaseModel):
    """How to quantise and how much accuracy may be lost."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    section: ClassVar[str] = "quantize"

    max_auc_drop: float = Field(
        default=0.005,
        ge=0.0,
        le=1.0,
        description="Largest tolerated FP32 AUC minus INT8 AUC on held-out data.",
    )
    weight_type: Literal["int8", "uint8"] = Field(default="int8", description="Integer type of the weights.")
    per_channel: bool = Field(
        default=False, description="One scale per output channel instead of per tensor."
    )


class QuantizationRejected(ValueError):
    """The INT8 model lost more accuracy than the gate allows; it must not be served."""

    def __init__(self, message: str, result: ParityResult):
        super().__init__(message)
        self.result = result


@dataclass(frozen=True)
class ParityResult:
    """FP32 vs INT8 on the same held-out rows."""

    auc_fp32: float
    """ROC AUC of the FP32 model."""
    auc_int8: float
    """ROC AUC of the INT8 model."""
    max_abs_diff: float
    """Largest |INT8 - FP32| probability on any row."""
    n_rows: int
    """Rows compared."""
    max_auc_drop: float
    """The bound the drop was judged against."""

    @property
    def auc_drop(self) -> float:
        return self.auc_fp32 - self.auc_int8

    @property
    def passed(self) -> bool:
        return self.auc_drop <= self.max_auc_drop

    def metrics(self) -> dict[str, float]:
        """The parity figures as the MLflow metrics of the quantize run."""
        return {
            "auc_fp32": self.auc_fp32,
            "auc_int8": self.auc_int8,
            "auc_drop": self.auc_drop,
            "max_abs_diff": self.max_abs_diff,
        }

    def message(self) -> str:
        verdict = "within" if self.passed else "exceeds"
        return (
            f"INT8 AUC {self.auc_int8:.5f} vs FP32 {self.auc_fp32:.5f} on {self.n_rows} held-out rows: "
            f"drop {self.auc_drop:.5f} {verdict} the bound {self.max_auc_drop:.5f} "
            f"(max |probability diff| {self.max_abs_diff:.4f})"
        )


def quantize_onnx(fp32_path: Path, out_path: Path, config: QuantizeConfig) -> Path:
    """Write the dynamically quantised ``fp32_path`` to ``out_path`` (one self-contained file)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.shape_inference import quant_pre_process

    fp32_path, out_path = Path(fp32_path), Path(out_path)
    if not fp32_path.is_file():
        raise FileNotFoundError(f"FP32 model {fp32_path} does not exist")
    if out_path.suffix != ".onnx" or out_path.resolve() == fp32_path.resolve():
        raise ValueError(f"output {out_path} must be a new .onnx path, not the input model")
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="quantize-") as tmp:
        prepared = Path(tmp) / "prepared.onnx"
        quant_pre_process(str(fp32_path), str(prepared))
        quantize_dynamic(
            prepared,
            out_path,
            weight_type=QuantType.QInt8 if config.weight_type == "int8" else QuantType.QUInt8,
            per_channel=config.per_channel,
        )
    return out_path


def compare(
    labels: np.ndarray, fp32_scores: np.ndarray, int8_scores: np.ndarray, max_auc_drop: float
) -> ParityResult:
    """The parity verdict for two models' probabilities on the same labelled rows."""
    import numpy as np
    from sklearn.metrics import roc_auc_score

    labels = np.asarray(labels)
    if len(np.unique(labels)) != 2:
        raise ValueError(
            f"AUC parity needs held-out rows with both classes; the labels hold {sorted(np.unique(labels).tolist())}"
        )
    if not (len(labels) == len(fp32_scores) == len(int8_scores)):
        raise ValueError(f"{len(labels)} labels but {len(fp32_scores)} / {len(int8_scores)} scores")
    return ParityResult(
        auc_fp32=float(roc_auc_score(labels, fp32_scores)),
        auc_int8=float(roc_auc_score(labels, int8_scores)),
        max_abs_diff=float(np.max(np.abs(np.asarray(fp32_scores) - np.asarray(int8_scores)))),
        n_rows=len(labels),
        max_auc_drop=max_auc_drop,
    )


def quantize_with_gate(
    fp32_path: Path, out_path: Path, holdout: pd.DataFrame, label: str, config: QuantizeConfig
) -> ParityResult:
    """Quantise, score both models on ``holdout`` and keep ``out_path`` only if the gate passes.

    Raises :class:`QuantizationRejected` (and removes ``out_path``) when the AUC drop
    exceeds ``config.max_auc_drop``.
    """
    from mlops.model.onnx_model import OnnxScorer

    if label not in holdout.columns:
        raise ValueError(f"held-out data has no label column {label!r}; columns are {list(holdout.columns)}")
    fp32 = OnnxScorer.load(Path(fp32_path))
    quantize_onnx(fp32_path, out_path, config)
    int8 = OnnxScorer.load(Path(out_path))
    x = fp32.spec.encode(holdout)
    result = compare(
        holdout[label].to_numpy(), fp32.predict_encoded(x), int8.predict_encoded(x), config.max_auc_drop
    )
    if not result.passed:
        Path(out_path).unlink(missing_ok=True)
        raise QuantizationRejected(
            f"refusing the INT8 model: {result.message()}. Keep serving FP32, or raise max_auc_drop "
            "if that loss is acceptable.",
            result,
        )
    return result
