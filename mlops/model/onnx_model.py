"""The ONNX model contract every layer shares: tensor names, metadata keys, scoring with ONNX Runtime.

The exported graph takes the encoded matrix (``features``, float32 [batch, n_features])
and returns ``probability`` (float32 [batch]). The fitted :class:`FeatureSpec` travels
inside the file as ONNX ``metadata_props``, so one ``model.onnx`` is enough to score
raw rows: the registry, the evaluator and the server need nothing else. Scoring never
imports torch, so a server needs only ONNX Runtime, numpy and pandas.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from mlops.data.features import FeatureSpec

if TYPE_CHECKING:
    import numpy as np
    import onnxruntime as ort
    import pandas as pd

INPUT_NAME = "features"
OUTPUT_NAME = "probability"
SPEC_KEY = "mlops.feature_spec"
CONFIG_KEY = "mlops.model_config"


def onnx_file(folder: Path) -> Path | None:
    """The model file of a downloaded registry version: its ``model.onnx``, else its first ``.onnx`` file in
    path order; None when it holds none."""
    files = sorted(Path(folder).rglob("*.onnx"))
    return next((f for f in files if f.name == "model.onnx"), files[0] if files else None)


class OnnxModelError(ValueError):
    """An ONNX file cannot be scored as a model of this platform; the message says why."""


class OnnxScorer:
    """Scores raw rows or encoded matrices with an exported model in ONNX Runtime."""

    def __init__(self, session: ort.InferenceSession, spec: FeatureSpec, config_json: str, path: Path):
        self.session = session
        self.spec = spec
        self.config_json = config_json
        self.path = path

    @classmethod
    def load(cls, path: Path, intra_op_threads: int = 1) -> OnnxScorer:
        """Open ``path`` on the CPU provider.

        One intra-op thread is the default because, for a small MLP, extra threads
        cost more in synchronisation than they save (measured slower on 2 cores).
        """
        import onnxruntime as ort

        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"ONNX model {path} does not exist; export it first with export_onnx")
        if intra_op_threads < 1:
            raise ValueError(f"intra_op_threads must be >= 1, got {intra_op_threads}")
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = intra_op_threads
        options.inter_op_num_threads = 1
        try:
            session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # ORT raises its own Fail/InvalidGraph/... types
            raise OnnxModelError(f"ONNX Runtime cannot load {path}: {exc}") from exc

        metadata = session.get_modelmeta().custom_metadata_map
        missing = [key for key in (SPEC_KEY, CONFIG_KEY) if key not in metadata]
        if missing:
            raise OnnxModelError(
                f"{path} has no metadata {missing}; it was not written by the platform's ONNX export "
                "(re-export the model so the file carries its feature spec)"
            )
        try:
            spec = FeatureSpec.model_validate(json.loads(metadata[SPEC_KEY]))
        except ValueError as exc:  # JSONDecodeError and pydantic's ValidationError are both ValueErrors
            raise OnnxModelError(f"{path} carries an invalid {SPEC_KEY}: {exc}") from exc
        inputs = session.get_inputs()
        outputs = session.get_outputs()
        if [i.name for i in inputs] != [INPUT_NAME] or [o.name for o in outputs] != [OUTPUT_NAME]:
            raise OnnxModelError(
                f"{path} has inputs {[i.name for i in inputs]} and outputs {[o.name for o in outputs]}; "
                f"expected [{INPUT_NAME!r}] -> [{OUTPUT_NAME!r}]"
            )
        width = inputs[0].shape[1]
        if width != spec.n_features:
            raise OnnxModelError(
                f"{path} takes {width} features but its feature spec lists {spec.n_features}; the file is corrupt"
            )
        return cls(session, spec, metadata[CONFIG_KEY], path)

    def predict_encoded(self, x: np.ndarray) -> np.ndarray:
        """Probabilities (float32 [rows]) for a matrix encoded by :meth:`FeatureSpec.encode`."""
        import numpy as np

        x = np.ascontiguousarray(x, dtype=np.float32)
        if x.ndim != 2 or x.shape[1] != self.spec.n_features:
            raise ValueError(
                f"encoded input must have shape [rows, {self.spec.n_features}], got {list(x.shape)}; "
                "encode raw rows with scorer.spec.encode(frame) or call predict_proba(frame)"
            )
        if x.shape[0] == 0:
            return np.empty((0,), dtype=np.float32)
        (probability,) = self.session.run([OUTPUT_NAME], {INPUT_NAME: x})
        return np.asarray(probability, dtype=np.float32)

    def predict_proba(self, frame: pd.DataFrame) -> np.ndarray:
        """Probabilities for raw rows holding (at least) the model's feature columns."""
        return self.predict_encoded(self.spec.encode(frame))
