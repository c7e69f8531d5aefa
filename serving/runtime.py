"""One loaded model version: an ONNX Runtime session plus what the protocols need to describe it.

The session is built from the very bytes whose SHA-256 was checked, so there is no
window in which a file swapped on disk after verification could be loaded.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mlops.data.features import FeatureSpec
from mlops.model.onnx_model import INPUT_NAME, OUTPUT_NAME, SPEC_KEY

if TYPE_CHECKING:
    from pathlib import Path

    import numpy as np
    import onnxruntime as ort

    from serving.model_source import ModelArtifact


class ModelLoadError(ValueError):
    """The file is not a servable model of this platform."""


@dataclass(frozen=True)
class ExplainReference:
    """A version's reference rows, encoded, and its reason texts."""

    x: np.ndarray
    """float32 ``[rows, n_features]``: the stored rows as the model reads them."""
    texts: dict[str, str]
    """Per feature the schema file's reason text (features not named read ``<feature> = <value>``)."""

    @classmethod
    def read(cls, path: Path, spec: FeatureSpec, where: str) -> ExplainReference:
        """The reference file at ``path``, encoded with ``spec``; ``ValueError`` naming ``where`` when unusable."""
        from mlops.model.row_attribution import REFERENCE_FILE, read_reference

        frame, texts = read_reference(path.read_bytes(), f"{where} {REFERENCE_FILE}")
        missing = [name for name in spec.names if name not in frame.columns]
        if missing or frame.empty:
            raise ValueError(
                f"{where} {REFERENCE_FILE} lacks the feature column(s) {missing} or has no rows; re-register the "
                "version (mlops run training) to store its reference rows again"
            )
        return cls(spec.encode(frame), {k: v for k, v in texts.items() if k in spec.names})


@dataclass(frozen=True)
class LoadedModel:
    """An immutable snapshot: swapping models means replacing the whole object, never mutating it."""

    name: str
    version: str
    sha256: str
    spec: FeatureSpec
    session: ort.InferenceSession
    precision: str
    tags: dict[str, str] = field(default_factory=dict)
    reference: ExplainReference | None = None
    """The reference rows its reasons are measured against; None for a version registered without them."""

    @property
    def n_features(self) -> int:
        return self.spec.n_features

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Probabilities float32 [rows] for an encoded float32 [rows, n_features] matrix."""
        (probability,) = self.session.run([OUTPUT_NAME], {INPUT_NAME: x})
        return probability


def session_options(intra_op_threads: int, inter_op_threads: int) -> ort.SessionOptions:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = intra_op_threads
    options.inter_op_num_threads = inter_op_threads
    return options


def load_model(artifact: ModelArtifact, intra_op_threads: int = 1, inter_op_threads: int = 1) -> LoadedModel:
    """Verify ``artifact``'s digest once more on the bytes themselves and open them on the CPU provider."""
    import onnxruntime as ort

    from serving.model_source import PRECISION_TAG, DigestMismatchError

    data = artifact.path.read_bytes()
    actual = hashlib.sha256(data).hexdigest()
    if actual != artifact.sha256:
        raise DigestMismatchError(
            f"refusing to load {artifact.name} version {artifact.version}: {artifact.path} has SHA-256 "
            f"{actual}, the registry recorded {artifact.sha256}"
        )
    try:
        session = ort.InferenceSession(
            data, session_options(intra_op_threads, inter_op_threads), providers=["CPUExecutionProvider"]
        )
    except Exception as exc:  # ORT raises its own Fail/InvalidGraph/... types
        raise ModelLoadError(
            f"ONNX Runtime cannot load {artifact.name} version {artifact.version}: {exc}"
        ) from exc

    where = f"{artifact.name} version {artifact.version}"
    metadata = session.get_modelmeta().custom_metadata_map
    if SPEC_KEY not in metadata:
        raise ModelLoadError(
            f"{where} has no {SPEC_KEY} metadata; it was not exported by training.onnx_export, "
            "so the server cannot know its feature names"
        )
    try:
        spec = FeatureSpec.model_validate(json.loads(metadata[SPEC_KEY]))
    except ValueError as exc:
        raise ModelLoadError(f"{where} carries an invalid {SPEC_KEY}: {exc}") from exc
    inputs, outputs = session.get_inputs(), session.get_outputs()
    if [i.name for i in inputs] != [INPUT_NAME] or [o.name for o in outputs] != [OUTPUT_NAME]:
        raise ModelLoadError(
            f"{where} maps {[i.name for i in inputs]} -> {[o.name for o in outputs]}; "
            f"the server expects [{INPUT_NAME!r}] -> [{OUTPUT_NAME!r}]"
        )
    if inputs[0].shape[1] != spec.n_features:
        raise ModelLoadError(
            f"{where} takes {inputs[0].shape[1]} features but its feature spec lists {spec.n_features}"
        )
    reference = None
    if artifact.reference_path is not None:
        try:
            reference = ExplainReference.read(artifact.reference_path, spec, where)
        except ValueError as exc:
            raise ModelLoadError(str(exc)) from exc
    return LoadedModel(
        name=artifact.name,
        version=artifact.version,
        sha256=artifact.sha256,
        spec=spec,
        session=session,
        precision=artifact.tags.get(PRECISION_TAG, "fp32"),
        tags=artifact.tags,
        reference=reference,
    )
