"""Export the trained model to ONNX and prove ONNX Runtime scores it like torch does.

Serving runs the ONNX file, evaluation and the gate judged the torch model: the
parity check is what makes the gate's verdict apply to what gets served. It runs on
real test rows (missing values and all) as one batch, and on one row alone, because
a dynamic-batch bug would show only at a batch size the export did not trace.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from mlops.vocabulary import ONNX_FILE

if TYPE_CHECKING:
    import pandas as pd

    from training.model import TabularNet
    from training.onnx_export import ParityReport

PARITY_ROWS = 512


class ParityError(RuntimeError):
    """ONNX Runtime and torch disagree beyond the tolerance; the export must not be served."""


def verify_export(model: TabularNet, onnx_path: Path, frame: pd.DataFrame, tolerance: float) -> ParityReport:
    """Compare ``onnx_path`` with ``model`` on ``frame`` (one batch, then its first row alone).

    Returns the report of the worse of the two checks; raises :class:`ParityError` if
    either exceeds ``tolerance`` (absolute difference in probability).
    """
    from mlops.model.onnx_model import OnnxScorer
    from training.onnx_export import check_parity

    scorer = OnnxScorer.load(onnx_path)
    batch = check_parity(model, scorer, frame, atol=tolerance, rtol=0.0)
    single = check_parity(model, scorer, frame.head(1), atol=tolerance, rtol=0.0)
    for label, report in (("batch", batch), ("single-row", single)):
        if not report.ok:
            raise ParityError(
                f"ONNX Runtime differs from torch on the {label} check of {report.n_rows} row(s): "
                f"max abs diff {report.max_abs_diff:.3g} exceeds tolerance {tolerance:g} at row "
                f"{report.worst_row} (torch {report.torch_value:.6f}, onnx {report.onnx_value:.6f}). "
                "The export is not faithful; check for ops the exporter translated differently, "
                "or raise export.tolerance only if the difference is acceptable."
            )
    return batch if batch.max_abs_diff >= single.max_abs_diff else single


def run_export(model_dir: Path, sample_data_path: Path, onnx_out_dir: Path, tolerance: float) -> ParityReport:
    """Export ``model_dir`` to ``onnx_out_dir/model.onnx`` and check parity on the sample data.

    On a parity failure the written files are removed, so nothing downstream can
    pick up an unfaithful model.
    """
    from mlops.data.dataset import DatasetError, load_table
    from training.model import load_model
    from training.onnx_export import export_onnx

    if not (isinstance(tolerance, int | float) and math.isfinite(tolerance) and 0 < tolerance < 1):
        raise ValueError(
            f"tolerance {tolerance!r} is not a usable probability difference; pass a value in (0, 1), e.g. 1e-4"
        )
    model = load_model(Path(model_dir))
    frame, _ = load_table(str(sample_data_path))
    if frame.empty:
        raise DatasetError(f"sample data {sample_data_path} has no rows; parity needs at least one row")
    sample = frame.head(PARITY_ROWS)

    onnx_path = Path(onnx_out_dir) / ONNX_FILE
    export_onnx(model, onnx_path)
    try:
        return verify_export(model, onnx_path, sample, tolerance)
    except ParityError:
        for written in (onnx_path, onnx_path.with_name(onnx_path.name + ".data")):
            written.unlink(missing_ok=True)
        raise
