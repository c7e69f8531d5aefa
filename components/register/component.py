"""KFP wrapper for :mod:`components.register.register`."""

from typing import NamedTuple

from kfp import dsl
from kfp.dsl import Dataset, Input, Model

from mlops.images import PLATFORM_IMAGE


@dsl.component(base_image=PLATFORM_IMAGE, install_kfp_package=False)
def register_model(
    onnx_model: Input[Model],
    test_data: Input[Dataset],
    model_name: str,
    dataset_digest: str,
    suite_version: str,
    train_run_id: str,
    git_commit: str,
    tracking: dict,
    pipeline_run_id: str,
    trigger: str = "",
) -> NamedTuple("RegisterOutputs", [("version", str), ("onnx_sha256", str)]):  # type: ignore[valid-type]
    """Registers the ONNX model as a new version with lineage tags and alias ``challenger``."""
    from collections import namedtuple
    from pathlib import Path

    import pandas as pd

    from components.register.register import register_onnx_model
    from mlops.tracking.context import TrackingContext
    from mlops.vocabulary import Lineage, package_version

    context = TrackingContext.from_dict(tracking, pipeline_run_id)
    registered = register_onnx_model(
        onnx_dir=Path(onnx_model.path),
        example_frame=pd.read_parquet(test_data.path),
        model_name=model_name,
        lineage=Lineage(
            kfp_run_id=context.pipeline_run_id,
            git_commit=git_commit,
            dataset_digest=dataset_digest,
            suite_version=suite_version,
            package_version=package_version(),
            train_run_id=train_run_id,
            trigger=trigger,
        ),
        context=context,
        label=test_data.metadata.get("schema", {}).get("label"),
    )
    onnx_model.metadata["model_uri"] = registered.model_uri
    RegisterOutputs = namedtuple("RegisterOutputs", ["version", "onnx_sha256"])
    return RegisterOutputs(registered.version, registered.onnx_sha256)
