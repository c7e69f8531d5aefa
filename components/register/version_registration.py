"""Register an exported ONNX model as a new MLflow model version with its lineage.

The registry is the single source of truth for "which model is which": the
version carries lineage tags (where its data, code and pipeline run came from)
and the SHA-256 of its ONNX file, which the server checks before loading.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from components.register.explain_reference_upload import DEFAULT_REFERENCE_ROWS, log_explain_reference
from components.register.profile_upload import log_reference_profile
from mlops.tracking.registration_faults import RegistrationProgress, registering
from mlops.tracking.store import TrackingStore
from mlops.vocabulary import (
    EXPLAIN_REFERENCE_TAG,
    MODEL_NAME_TAG,
    MODEL_VERSION_TAG,
    ONNX_FILE,
    PROFILE_TAG,
    Lineage,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    import pandas as pd


@dataclass(frozen=True)
class RegisteredVersion:
    model_name: str
    version: str
    model_uri: str
    onnx_sha256: str


def register_onnx_model(
    onnx_dir: Path,
    example_frame: pd.DataFrame,
    model_name: str,
    lineage: Lineage,
    store: TrackingStore,
    label: str | None = None,
    reasons: Mapping[str, str] | None = None,
    reference_rows: int = DEFAULT_REFERENCE_ROWS,
    subject_key: str = "",
    feature_tags: Mapping[str, str] | None = None,
) -> RegisteredVersion:
    """Log the ONNX model with signature and input example and register it with its lineage.

    No alias yet: ``challenger`` moves only once every gate has decided (``combine_gates``), so a
    run whose gate crashes leaves no challenger behind. ``example_frame`` (the test split) is also
    the version's reference profile for drift monitoring; ``label`` names its label column, for the
    calibration and reference metrics. ``reference_rows`` of it (with the ``subject_key`` column) and the
    schema file's ``reasons`` texts are stored for the reasons the server serves with each score
    (:mod:`components.register.explain_reference_upload`; 0 rows: the version serves none).
    ``feature_tags`` (:func:`mlops.vocabulary.feature_lineage_tags`) say which feature service, views and
    entity table a training set built from the feature store came from; they join the lineage tags.
    """
    from importlib.metadata import version

    import mlflow
    import onnx
    from mlflow.models import infer_signature

    from mlops.model.onnx_model import OnnxScorer

    if not model_name or "/" in model_name or "@" in model_name:
        raise ValueError(f"model name {model_name!r} is invalid; use letters, digits, '-', '_' or '.'")
    onnx_path = Path(onnx_dir) / ONNX_FILE
    if not onnx_path.is_file():
        raise FileNotFoundError(f"{onnx_dir} holds no {ONNX_FILE}; run the export_onnx step first")

    scorer = OnnxScorer.load(onnx_path)
    example = scorer.spec.encode(example_frame.head(5))
    signature = infer_signature(example, scorer.predict_encoded(example))

    # Every part of a version is stored, read back and signed BEFORE the version exists; the version is then
    # created with every tag in one request, and recorded (TrackingStore.create_signed_version). A fault
    # before that request registers nothing; after it, only the audit record can fail, and then the version
    # is deleted again (registration_faults.py says what is said and the one window left).
    progress = RegistrationProgress(model_name)
    with registering(store, progress), store.task_run("register") as run:
        run_id = run.info.run_id
        # One self-contained file: the digest below then covers every weight the server will load.
        info = mlflow.onnx.log_model(
            onnx.load(str(onnx_path)),
            name="model",
            signature=signature,
            input_example=example,
            save_as_external_data=False,
            # Stated, not inferred: inference scans imports (~2 s) and could pick up torch.
            pip_requirements=[f"onnx=={version('onnx')}", f"onnxruntime=={version('onnxruntime')}"],
        )
        profile_uri = log_reference_profile(store, run_id, scorer, example_frame, label, model_name)
        explain_uri = log_explain_reference(
            store, run_id, scorer.spec, example_frame, reasons or {}, reference_rows, subject_key
        )
        tags = {
            **lineage.tags(),
            **(feature_tags or {}),
            **({PROFILE_TAG: profile_uri} if profile_uri else {}),
            **({EXPLAIN_REFERENCE_TAG: explain_uri} if explain_uri else {}),
        }
        number, onnx_sha256 = store.create_signed_version(
            model_name,
            info,
            run_id,
            tags,
            progress,
            record=lambda number, digest: _audit_registration(
                model_name, number, digest, lineage, feature_tags or {}
            ),
        )
        mlflow.set_tags({MODEL_NAME_TAG: model_name, MODEL_VERSION_TAG: number})
        mlflow.log_params({"model_name": model_name, "model_version": number})
    return RegisteredVersion(model_name, number, f"models:/{model_name}/{number}", onnx_sha256)


def _audit_registration(
    model_name: str, number: str, onnx_sha256: str, lineage: Lineage, feature_tags: Mapping[str, str]
) -> None:
    from mlops.governance.audit import record_in_run

    subject = f"{model_name}/{number}"
    tags = {**lineage.tags(), **feature_tags}
    details = {"onnx_sha256": onnx_sha256, **{k.removeprefix("mlops."): v for k, v in tags.items()}}
    record_in_run(
        "model.registered", subject, details, pipeline_run_id=lineage.kfp_run_id, model_version=subject
    )
