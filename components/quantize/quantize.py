"""The INT8 step of a pipeline: quantise a registered version and register the result if the gate passes.

The logic lives in :mod:`components.quantize.int8` (``mlops quantize`` runs the same code); this
module turns a gate refusal into a recorded decision instead of a failed task,
like the promotion gates: a pipeline whose INT8 copy is not accurate enough still
succeeds and keeps serving FP32.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mlops.gates import REJECT
from mlops.tracking.store import TrackingStore
from mlops.vocabulary import DECISION_TAG, REASON_TAG

if TYPE_CHECKING:
    from components.quantize.quantizer import ParityResult

ACCEPT = "accept"


@dataclass(frozen=True)
class QuantizeOutcome:
    decision: str
    """``accept`` (INT8 version registered) or ``reject`` (gate refused, nothing registered)."""
    reason: str
    """The parity figures and the bound, in words."""
    version: str
    """The new INT8 version; empty on reject."""
    parity: ParityResult
    """FP32 vs INT8 on the held-out rows: the figures the gate judged."""


def run_quantize(
    model_name: str,
    source_version: str,
    holdout_path: Path,
    label_column: str,
    max_auc_drop: float,
    out_dir: Path,
    store: TrackingStore,
) -> QuantizeOutcome:
    """Quantise ``model_name`` version ``source_version``; the INT8 file goes to ``out_dir/model.onnx``."""
    import mlflow

    from components.quantize.int8 import quantize_registered
    from components.quantize.quantizer import QuantizationRejected, QuantizeConfig
    from mlops.data.dataset import load_table

    if not source_version.isdigit():
        raise ValueError(f"source_version {source_version!r} must be a registry version number such as '3'")
    config = QuantizeConfig(max_auc_drop=max_auc_drop)
    holdout, _ = load_table(str(holdout_path))
    out_path = Path(out_dir) / "model.onnx"
    try:
        result = quantize_registered(
            store, model_name, source_version, holdout, label_column, config, out_path=out_path
        )
    except QuantizationRejected as rejected:
        with store.task_run("quantize"):
            mlflow.log_metrics(rejected.result.metrics())
            mlflow.set_tags({DECISION_TAG: REJECT, REASON_TAG: str(rejected)})
        return QuantizeOutcome(REJECT, str(rejected), "", rejected.result)
    return QuantizeOutcome(ACCEPT, result.parity.message(), result.version, result.parity)
