"""KFP wrapper for :mod:`components.register.version_registration`."""

from typing import NamedTuple

from kfp import dsl
from kfp.dsl import Dataset, Input, Model

from mlops.images import PLATFORM_IMAGE


@dsl.component(base_image=PLATFORM_IMAGE, install_kfp_package=False)
def register_model(
    onnx_model: Input[Model],
    test_data: Input[Dataset],
    registration: dict,
    registration_model_name: str,
    dataset_digest: str,
    suite_version: str,
    train_run_id: str,
    tracking: dict,
    pipeline_run_id: str,
    feature_lineage: str = "",
) -> NamedTuple("RegisterOutputs", [("version", str), ("onnx_sha256", str)]):  # type: ignore[valid-type]
    """Registers the ONNX model as a new version with lineage tags and alias ``challenger``.

    ``registration`` is that section (:class:`~mlops.registration_settings.RegistrationSettings`: the commit and
    the trigger recorded on the version, the reference rows stored for its reasons) and ``registration_model_name`` its per-run setting
    ``registration.model_name``. ``feature_lineage`` is prepare-data's record of a training set built from
    the feature store (JSON; empty for a plain table): its service, views and entity table become version tags.
    """
    import json
    from collections import namedtuple
    from pathlib import Path

    import pandas as pd

    from components.register.version_registration import register_onnx_model
    from mlops.model.row_attribution import REASONS_DATASET_KEY
    from mlops.origin_facts import package_version
    from mlops.registration_settings import RegistrationSettings
    from mlops.settings import from_section
    from mlops.tracking.store import TrackingStore
    from mlops.vocabulary import Lineage, feature_lineage_tags

    settings = from_section(RegistrationSettings, registration, model_name=registration_model_name)
    store = TrackingStore.for_task(tracking, pipeline_run_id)
    registered = register_onnx_model(
        onnx_dir=Path(onnx_model.path),
        example_frame=pd.read_parquet(test_data.path),
        model_name=settings.model_name,
        lineage=Lineage(
            kfp_run_id=store.pipeline_run_id,
            git_commit=settings.git_commit,
            dataset_digest=dataset_digest,
            suite_version=suite_version,
            package_version=package_version(),
            train_run_id=train_run_id,
            trigger=settings.trigger,
            split=str(test_data.metadata.get("split", "")),
        ),
        store=store,
        label=test_data.metadata.get("schema", {}).get("label"),
        # The schema file's reason texts, when validate-data passed them on with the data.
        reasons=test_data.metadata.get(REASONS_DATASET_KEY) or {},
        subject_key=test_data.metadata.get("schema", {}).get("subject_key", ""),
        reference_rows=settings.explain_reference_rows,
        feature_tags=feature_lineage_tags(json.loads(feature_lineage) if feature_lineage else {}),
    )
    onnx_model.metadata["model_uri"] = registered.model_uri
    RegisterOutputs = namedtuple("RegisterOutputs", ["version", "onnx_sha256"])
    return RegisterOutputs(registered.version, registered.onnx_sha256)
