"""ONNX export of :class:`TabularNet`, scoring with ONNX Runtime, and the torch-vs-ONNX parity check.

The exported graph takes the encoded matrix (``features``, float32 [batch, n_features])
and returns ``probability`` (float32 [batch]); the sigmoid is part of the graph so no
client has to know the model emits logits. The fitted :class:`FeatureSpec` and the
:class:`ModelConfig` travel inside the file as ONNX ``metadata_props``, so one
``model.onnx`` is enough to score raw rows: the registry, the evaluator and the server
need nothing else.

Storage decision: torch's exporter writes ``model.onnx`` + ``model.onnx.data`` by
default. A tabular model is a few hundred kilobytes, far below protobuf's 2 GB cap, so
we save every tensor inline in one ``model.onnx``: one file to hash, register and
ship, and no way to separate a graph from its weights. Only a model too large for
one protobuf (> :data:`INLINE_LIMIT_BYTES` of parameters) falls back to external
data, and then ``model.onnx.data`` must stay next to ``model.onnx``.

Scoring lives in :mod:`mlops.model.onnx_model` (the contract serving shares without torch).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlops.model.onnx_model import CONFIG_KEY, INPUT_NAME, OUTPUT_NAME, SPEC_KEY, OnnxModelError, OnnxScorer

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    from torch import nn

    from training.model import TabularNet

# Half of protobuf's 2 GiB message limit, leaving room for the graph and metadata.
INLINE_LIMIT_BYTES = 1 << 30


def _probability_head(model: TabularNet) -> nn.Module:
    """Wrap ``model`` so the exported graph ends in a sigmoid and outputs a probability."""
    import torch

    class ProbabilityHead(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.sigmoid(self.model(x))

    return ProbabilityHead().eval()


STACK_TRACE_KEY = "pkg.torch.onnx.stack_trace"
"""Node metadata the exporter fills with the Python stack that made the node, absolute source paths included."""


def _drop_source_paths(model: Any) -> None:
    """Remove each node's recorded stack trace: it names where the sources are installed (a clone, the
    image's site-packages), so the same weights exported in two places had two digests, and it tells
    whoever receives the model about the build machine's file system. Weights, graph and the
    exporter's module names (``namespace``) stay."""
    from onnx_ir.traversal import RecursiveGraphIterator

    for graph in [model.graph, *model.functions.values()]:
        for node in RecursiveGraphIterator(graph):
            node.metadata_props.pop(STACK_TRACE_KEY, None)


def _parameter_bytes(model: nn.Module) -> int:
    tensors = [*model.parameters(), *model.buffers()]
    return sum(t.numel() * t.element_size() for t in tensors)


def export_onnx(model: TabularNet, path: Path) -> Path:
    """Export ``model`` (in eval mode, dynamic batch) to ``path`` and return ``path``."""
    import torch

    from training.model import TabularNet

    path = Path(path)
    if path.suffix != ".onnx":
        raise ValueError(f"ONNX output path {path} must end in .onnx, e.g. {path.with_suffix('.onnx')}")
    if not isinstance(model, TabularNet):
        raise TypeError(f"export_onnx needs a training.model.TabularNet, got {type(model).__name__}")
    path.parent.mkdir(parents=True, exist_ok=True)

    # Two rows: a batch of one would let the exporter specialise the batch dimension to 1.
    device = next(model.parameters()).device
    example = torch.zeros((2, model.spec.n_features), dtype=torch.float32, device=device)
    batch = torch.export.Dim("batch", min=1)
    was_training = model.training
    model.eval()  # dropout off: the exported graph is the inference path
    try:
        program = torch.onnx.export(
            _probability_head(model),
            (example,),
            input_names=[INPUT_NAME],
            output_names=[OUTPUT_NAME],
            dynamic_shapes=({0: batch},),
            dynamo=True,
            optimize=True,
            verbose=False,
        )
    finally:
        model.train(was_training)
    if program is None:  # only the legacy exporter returns None
        raise RuntimeError("torch.onnx.export returned no program; the dynamo exporter is required")

    _drop_source_paths(program.model)
    program.model.metadata_props[SPEC_KEY] = model.spec.model_dump_json()
    program.model.metadata_props[CONFIG_KEY] = model.config.model_dump_json()
    external = _parameter_bytes(model) > INLINE_LIMIT_BYTES
    stale_data = path.with_name(path.name + ".data")
    if not external and stale_data.exists():
        stale_data.unlink()  # left by an earlier export; would be mistaken for this model's weights
    program.save(path, external_data=external)
    return path


@dataclass(frozen=True)
class ParityReport:
    """How closely ONNX Runtime reproduces torch on the same rows."""

    max_abs_diff: float
    """Largest |onnx - torch| probability; ``inf`` when either side produced NaN."""
    n_rows: int
    """Rows compared."""
    ok: bool
    """Every row within ``atol + rtol * |torch|`` (numpy ``allclose`` semantics)."""
    worst_row: int = 0
    """Position (0-based, in the compared frame) of the row with the largest difference."""
    torch_value: float = 0.0
    """Torch probability at ``worst_row``."""
    onnx_value: float = 0.0
    """ONNX Runtime probability at ``worst_row``."""


def torch_probabilities(model: TabularNet, x: np.ndarray) -> np.ndarray:
    """Probabilities from the torch model in eval mode, leaving its train/eval mode as it was."""
    import torch

    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            device = next(model.parameters()).device
            return torch.sigmoid(model(torch.from_numpy(x).to(device))).cpu().numpy()
    finally:
        model.train(was_training)


def check_parity(
    model: TabularNet, scorer: OnnxScorer, frame: pd.DataFrame, atol: float, rtol: float
) -> ParityReport:
    """Score ``frame`` with both runtimes and compare; report, never raise on a mismatch."""
    import numpy as np

    if frame.empty:
        raise ValueError("parity needs at least one row; pass a non-empty frame")
    if atol < 0 or rtol < 0:
        raise ValueError(f"tolerances must be >= 0, got atol={atol}, rtol={rtol}")
    if scorer.spec != model.spec:
        raise OnnxModelError(
            f"{scorer.path} carries a different feature spec than the torch model; it was exported "
            "from another model, so parity is meaningless (re-export this model)"
        )
    x = scorer.spec.encode(frame)
    expected = torch_probabilities(model, x).astype(np.float64)
    actual = scorer.predict_encoded(x).astype(np.float64)
    if expected.shape != actual.shape:
        raise OnnxModelError(f"ONNX output shape {actual.shape} differs from torch's {expected.shape}")
    diff = np.abs(actual - expected)
    diff[np.isnan(diff)] = np.inf  # a NaN on either side is the worst possible mismatch
    worst = int(np.argmax(diff))
    ok = bool(np.all(diff <= atol + rtol * np.abs(expected)))
    return ParityReport(
        max_abs_diff=float(diff[worst]),
        n_rows=len(frame),
        ok=ok,
        worst_row=worst,
        torch_value=float(expected[worst]),
        onnx_value=float(actual[worst]),
    )
