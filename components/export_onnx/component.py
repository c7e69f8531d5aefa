"""KFP wrapper for :mod:`components.export_onnx.verified_export`."""

from typing import NamedTuple

from kfp import dsl
from kfp.dsl import Dataset, Input, Model, Output

from mlops.images import PLATFORM_IMAGE


@dsl.component(base_image=PLATFORM_IMAGE, install_kfp_package=False)
def export_onnx_model(
    model: Input[Model],
    test_data: Input[Dataset],
    export: dict,
    onnx_model: Output[Model],
) -> NamedTuple("ExportOutputs", [("max_abs_diff", float)]):  # type: ignore[valid-type]
    """Exports the model to ONNX (directory with model.onnx) and fails if ONNX Runtime and torch disagree."""
    from collections import namedtuple
    from pathlib import Path

    from components.export_onnx.config import ExportSettings
    from components.export_onnx.verified_export import run_export
    from mlops.settings import from_section

    tolerance = from_section(ExportSettings, export).tolerance

    report = run_export(
        model_dir=Path(model.path),
        sample_data_path=Path(test_data.path),
        onnx_out_dir=Path(onnx_model.path),
        tolerance=tolerance,
    )
    onnx_model.metadata.update(
        {
            "framework": "onnx",
            "input": "features",
            "output": "probability",
            "parity_max_abs_diff": report.max_abs_diff,
            "parity_rows": report.n_rows,
            "parity_tolerance": tolerance,
        }
    )
    print(
        f"ONNX parity: max abs diff {report.max_abs_diff:.3g} on {report.n_rows} rows (tolerance {tolerance:g})"
    )
    ExportOutputs = namedtuple("ExportOutputs", ["max_abs_diff"])
    return ExportOutputs(report.max_abs_diff)
