"""KFP wrapper for :mod:`components.quantize.quantize`."""

from typing import NamedTuple

from kfp import dsl
from kfp.dsl import Dataset, Input, Model, Output

from mlops.images import PLATFORM_IMAGE


@dsl.component(base_image=PLATFORM_IMAGE, install_kfp_package=False)
def quantize_model(
    model_name: str,
    source_version: str,
    test_data: Input[Dataset],
    max_auc_drop: float,
    tracking: dict,
    pipeline_run_id: str,
    int8_model: Output[Model],
) -> NamedTuple(  # type: ignore[valid-type]
    "QuantizeOutputs",
    [("decision", str), ("reason", str), ("version", str), ("auc_fp32", float), ("auc_int8", float)],
):
    """Registers an INT8 copy of the version when its test AUC drops by at most ``max_auc_drop``."""
    from collections import namedtuple
    from pathlib import Path

    from components.quantize.quantize import run_quantize
    from mlops.data.dataset import schema_from_metadata
    from mlops.tracking.store import TrackingStore

    outcome = run_quantize(
        model_name=model_name,
        source_version=source_version,
        holdout_path=Path(test_data.path),
        label_column=schema_from_metadata(test_data.metadata, "quantize-model's test_data").label,
        max_auc_drop=max_auc_drop,
        out_dir=Path(int8_model.path),
        store=TrackingStore.for_task(tracking, pipeline_run_id),
    )
    int8_model.metadata.update(
        {
            "decision": outcome.decision,
            "precision": "int8",
            "quantized_from": source_version,
            "auc_drop": outcome.parity.auc_drop,
            "model_uri": f"models:/{model_name}/{outcome.version}" if outcome.version else "",
        }
    )
    print(f"quantize: {outcome.decision} ({outcome.reason})")
    QuantizeOutputs = namedtuple("QuantizeOutputs", ["decision", "reason", "version", "auc_fp32", "auc_int8"])
    return QuantizeOutputs(
        outcome.decision, outcome.reason, outcome.version, outcome.parity.auc_fp32, outcome.parity.auc_int8
    )
