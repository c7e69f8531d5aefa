"""Quantise a registered model version and register the INT8 model as a new version.

The INT8 version inherits the source version's lineage tags (same data, same code,
same training run) and adds ``mlops.quantized_from=<source version>``,
``mlops.precision=int8``, its own ``mlops.onnx_sha256`` and the parity figures, so
the registry alone explains where it came from and why it was allowed. No alias
moves here: serving it is a promotion decision like any other.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from components.quantize.quantizer import ParityResult, QuantizeConfig, quantize_with_gate
from mlops.tracking.registration_faults import RegistrationProgress, registering
from mlops.tracking.store import TrackingStore
from mlops.vocabulary import (
    MODEL_NAME_TAG,
    MODEL_VERSION_TAG,
    ONNX_FILE,
    PRECISION_TAG,
    QUANTIZED_FROM_TAG,
    TAG_PREFIX,
    Lineage,
)
from serving.model_source import RegisteredModelSource

if TYPE_CHECKING:
    import pandas as pd

LINEAGE_TAGS = Lineage.tag_names()


@dataclass(frozen=True)
class QuantizedVersion:
    source_version: str
    """The FP32 version that was quantised."""
    version: str
    """The new INT8 version ('' when written to a file instead of registered)."""
    parity: ParityResult
    """The gate's figures."""
    path: Path | None = None
    """Where the INT8 file was written, when not registered."""


def register_int8(
    int8_path: Path,
    holdout: pd.DataFrame,
    model_name: str,
    source_version: str,
    source_tags: dict[str, str],
    parity: ParityResult,
    store: TrackingStore,
) -> str:
    """Log ``int8_path`` as a new version of ``model_name`` with lineage and parity tags."""
    import mlflow
    import onnx
    from mlflow.models import infer_signature

    from mlops.model.onnx_model import OnnxScorer

    scorer = OnnxScorer.load(int8_path)
    example = scorer.spec.encode(holdout.head(5))
    # As the register step does: stored and signed first, one request with every tag, then model.signed.
    progress = RegistrationProgress(model_name)
    with registering(store, progress), store.task_run("quantize") as run:
        mlflow.log_params({"source_version": source_version, "max_auc_drop": parity.max_auc_drop})
        mlflow.log_metrics(parity.metrics())
        info = mlflow.onnx.log_model(
            onnx.load(str(int8_path)),
            name="model",
            signature=infer_signature(example, scorer.predict_encoded(example)),
            input_example=example,
            save_as_external_data=False,
        )
        tags = {key: source_tags[key] for key in LINEAGE_TAGS if key in source_tags}
        tags |= {
            QUANTIZED_FROM_TAG: source_version,
            PRECISION_TAG: "int8",
            f"{TAG_PREFIX}int8.auc_fp32": f"{parity.auc_fp32:.6f}",
            f"{TAG_PREFIX}int8.auc_int8": f"{parity.auc_int8:.6f}",
            f"{TAG_PREFIX}int8.auc_drop": f"{parity.auc_drop:.6f}",
            f"{TAG_PREFIX}int8.max_auc_drop": f"{parity.max_auc_drop:.6f}",
        }
        version, _ = store.create_signed_version(model_name, info, run.info.run_id, tags, progress)
        mlflow.set_tags({MODEL_NAME_TAG: model_name, MODEL_VERSION_TAG: version})
    return version


def quantize_registered(
    store: TrackingStore,
    model_name: str,
    source: str,
    holdout: pd.DataFrame,
    label: str,
    config: QuantizeConfig,
    out_path: Path | None = None,
    register: bool = True,
) -> QuantizedVersion:
    """Quantise ``models:/<model_name>/<source>`` (a version number or an alias).

    The source file is digest-checked like the server does. The INT8 file is written
    to ``out_path`` when given, and registered as a new version when ``register``.
    Raises :class:`~components.quantize.quantizer.QuantizationRejected` when the gate fails.
    """
    with tempfile.TemporaryDirectory(prefix="int8-") as tmp:
        registry = RegisteredModelSource(store, model_name, Path(tmp) / "cache")
        version = source if source.isdigit() else registry.version_for(source)
        artifact = registry.fetch(version)
        if artifact.tags.get(PRECISION_TAG, "fp32") != "fp32":
            raise ValueError(
                f"{model_name} version {version} is already {artifact.tags[PRECISION_TAG]}; quantise its FP32 "
                f"source (version {artifact.tags.get(QUANTIZED_FROM_TAG, '?')}) instead"
            )
        int8_path = Path(tmp) / ONNX_FILE
        parity = quantize_with_gate(artifact.path, int8_path, holdout, label, config)
        if out_path is not None:
            out_path = Path(out_path)
            out_path.parent.mkdir(parents=True, exist_ok=True)
            out_path.write_bytes(int8_path.read_bytes())
        new_version = ""
        if register:
            new_version = register_int8(int8_path, holdout, model_name, version, artifact.tags, parity, store)
    return QuantizedVersion(version, new_version, parity, out_path)
