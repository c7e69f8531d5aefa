"""Register an exported ONNX model as a new MLflow model version with its lineage.

The registry is the single source of truth for "which model is which": the
version carries lineage tags (where its data, code and pipeline run came from)
and the SHA-256 of its ONNX file, which the server checks before loading.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from components.common.tracking import TrackingContext, task_run

if TYPE_CHECKING:
    import pandas as pd

CHALLENGER = "challenger"
CHAMPION = "champion"
ONNX_FILE = "model.onnx"
TAG_PREFIX = "mlops."


@dataclass(frozen=True)
class Lineage:
    """Where a model version came from; each field becomes a ``mlops.<field>`` version tag."""

    kfp_run_id: str
    """KFP pipeline run id (the local runner's run id under the embedded default)."""
    git_commit: str
    """Commit of the pipeline code; empty when not run from a git checkout."""
    dataset_digest: str
    """SHA-256 of the training data file's bytes."""
    suite_version: str
    """Version of the expectation suite the data passed."""
    package_version: str
    """Version of the mlops package that trained the model."""
    train_run_id: str
    """MLflow run id of the training task."""

    def tags(self) -> dict[str, str]:
        return {f"{TAG_PREFIX}{k}": v for k, v in asdict(self).items()}


@dataclass(frozen=True)
class RegisteredVersion:
    model_name: str
    version: str
    model_uri: str
    onnx_sha256: str


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mlops")
    except PackageNotFoundError:
        return "unknown"


def register_onnx_model(
    onnx_dir: Path,
    example_frame: pd.DataFrame,
    model_name: str,
    lineage: Lineage,
    context: TrackingContext,
) -> RegisteredVersion:
    """Log the ONNX model with signature and input example, register it, alias it ``challenger``."""
    from importlib.metadata import version

    import mlflow
    import onnx
    from mlflow.models import infer_signature

    from training.onnx_export import OnnxScorer

    if not model_name or "/" in model_name or "@" in model_name:
        raise ValueError(f"model name {model_name!r} is invalid; use letters, digits, '-', '_' or '.'")
    onnx_path = Path(onnx_dir) / ONNX_FILE
    if not onnx_path.is_file():
        raise FileNotFoundError(f"{onnx_dir} holds no {ONNX_FILE}; run the export_onnx step first")

    scorer = OnnxScorer.load(onnx_path)
    example = scorer.spec.encode(example_frame.head(5))
    signature = infer_signature(example, scorer.predict_encoded(example))

    with task_run(context, "register"):
        # One self-contained file: the digest below then covers every weight the server will load.
        info = mlflow.onnx.log_model(
            onnx.load(str(onnx_path)),
            name="model",
            signature=signature,
            input_example=example,
            registered_model_name=model_name,
            save_as_external_data=False,
            # Stated, not inferred: inference scans imports (~2 s) and could pick up torch.
            pip_requirements=[f"onnx=={version('onnx')}", f"onnxruntime=={version('onnxruntime')}"],
        )
        number = str(info.registered_model_version)
        local_copy = Path(mlflow.artifacts.download_artifacts(f"models:/{model_name}/{number}"))
        onnx_sha256 = file_sha256(local_copy / ONNX_FILE)
        client = mlflow.MlflowClient()
        for key, value in {**lineage.tags(), f"{TAG_PREFIX}onnx_sha256": onnx_sha256}.items():
            client.set_model_version_tag(model_name, number, key, value)
        client.set_registered_model_alias(model_name, CHALLENGER, number)
        mlflow.set_tags({"mlops.model_name": model_name, "mlops.model_version": number})
        mlflow.log_params({"model_name": model_name, "model_version": number})
    return RegisteredVersion(model_name, number, f"models:/{model_name}/{number}", onnx_sha256)
