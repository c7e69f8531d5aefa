"""Stand-ins for the ONNX parity check whose torch-vs-ONNX difference per row is exactly known."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from mlops.data.features import FeatureSpec
from mlops.model.onnx_model import OnnxScorer
from training.model import ModelConfig, TabularNet


def half_probability_net(spec: FeatureSpec) -> TabularNet:
    """A real TabularNet whose every parameter is zero: it scores every row exactly 0.5."""
    import torch

    model = TabularNet(spec, ModelConfig(hidden_units=(4,), dropout=0.0, embedding_dim=1))
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.zero_()
    return model.eval()


class OffsetOnnxScorer(OnnxScorer):
    """An ONNX scorer stand-in that returns 0.5 + ``offsets(encoded matrix)`` per row.

    Paired with :func:`half_probability_net`, the ONNX-vs-torch difference of each row is
    exactly its offset, so parity tolerances can be hit exactly.
    """

    def __init__(self, spec: FeatureSpec, offsets: Callable[[np.ndarray], np.ndarray]):
        super().__init__(session=None, spec=spec, config_json="{}", path=Path("stub.onnx"))  # type: ignore[arg-type]
        self.offsets = offsets

    def predict_encoded(self, x: np.ndarray) -> np.ndarray:
        return 0.5 + np.asarray(self.offsets(x), dtype=np.float64)
