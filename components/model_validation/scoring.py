"""One way to score rows, whichever form the model arrives in.

The checks only need "encoded matrix in, probability out", so they run
unchanged on the torch model directory the train step writes and on the
exported ``model.onnx`` that serving runs (the export step proves both agree).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from mlops.data.features import FeatureSpec

BATCH_ROWS = 8192


@dataclass(frozen=True)
class ModelUnderCheck:
    """A model as the checks see it."""

    spec: FeatureSpec
    """Feature names and encoding the model was trained with."""
    predict_encoded: Callable[[np.ndarray], np.ndarray]
    """Float32 [rows, n_features] matrix (as :meth:`FeatureSpec.encode` makes) -> probabilities [rows]."""

    @property
    def features(self) -> tuple[str, ...]:
        return self.spec.names

    def predict(self, frame: pd.DataFrame) -> np.ndarray:
        return self.predict_encoded(self.spec.encode(frame))


def _torch_predict(model_dir: Path) -> tuple[FeatureSpec, Callable[[np.ndarray], np.ndarray]]:
    import numpy as np
    import torch

    from training.model import load_model

    model = load_model(model_dir)

    def predict(x: np.ndarray) -> np.ndarray:
        out = []
        with torch.inference_mode():
            for start in range(0, len(x), BATCH_ROWS):
                batch = torch.from_numpy(
                    np.ascontiguousarray(x[start : start + BATCH_ROWS], dtype=np.float32)
                )
                out.append(torch.sigmoid(model(batch)).numpy())
        return np.concatenate(out) if out else np.empty((0,), dtype=np.float32)

    return model.spec, predict


def load_scorer(path: Path) -> ModelUnderCheck:
    """Open a torch model directory (``save_model``), a directory holding ``model.onnx``, or an ``.onnx`` file."""
    from training.model import MODEL_FILE

    path = Path(path)
    if path.is_dir() and (path / MODEL_FILE).is_file():
        spec, predict = _torch_predict(path)
        return ModelUnderCheck(spec, predict)
    onnx_path = path / "model.onnx" if path.is_dir() else path
    if onnx_path.suffix == ".onnx" and onnx_path.is_file():
        from mlops.model.onnx_model import OnnxScorer

        onnx_scorer = OnnxScorer.load(onnx_path)
        return ModelUnderCheck(onnx_scorer.spec, onnx_scorer.predict_encoded)
    found = sorted(p.name for p in path.iterdir()) if path.is_dir() else "not a directory"
    raise FileNotFoundError(
        f"{path} is not a model: expected a directory with {MODEL_FILE} (training.model.save_model) or "
        f"model.onnx (export step), or an .onnx file; found {found}"
    )
