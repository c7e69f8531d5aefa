"""The tabular network, with the fitted preprocessing as buffers.

Input: float32 [batch, n_features] as produced by :meth:`FeatureSpec.encode`.
Output: logits [batch]. Because imputation, scaling and embedding lookups are
in ``forward``, the ONNX export is the whole inference path.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import nn

from mlops.data.features import FeatureSpec
from training.config import ModelConfig, TrainConfig

MODEL_FILE = "model.pt"
SPEC_FILE = "feature_spec.json"
CONFIG_FILE = "model_config.json"


class TabularNet(nn.Module):
    medians: torch.Tensor
    means: torch.Tensor
    stds: torch.Tensor
    vocab_max: torch.Tensor

    def __init__(self, spec: FeatureSpec, config: ModelConfig | None = None) -> None:
        super().__init__()
        self.spec = spec
        self.config = config or ModelConfig()
        self.n_numeric = len(spec.numeric)
        self.register_buffer("medians", torch.tensor(spec.medians, dtype=torch.float32))
        self.register_buffer("means", torch.tensor(spec.means, dtype=torch.float32))
        self.register_buffer("stds", torch.tensor(spec.stds, dtype=torch.float32))
        self.register_buffer(
            "vocab_max", torch.tensor([len(v) for v in spec.vocabularies], dtype=torch.float32)
        )
        dim = self.config.embedding_dim
        self.embeddings = nn.ModuleList(nn.Embedding(len(v) + 1, dim) for v in spec.vocabularies)
        layers: list[nn.Module] = []
        width = self.n_numeric + dim * len(spec.vocabularies)
        for hidden in self.config.hidden_units:
            layers += [nn.Linear(width, hidden), nn.ReLU(), nn.Dropout(self.config.dropout)]
            width = hidden
        layers.append(nn.Linear(width, 1))
        self.mlp = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        numeric = x[:, : self.n_numeric]
        numeric = torch.where(torch.isnan(numeric), self.medians, numeric)
        parts = [(numeric - self.means) / self.stds]
        if self.embeddings:
            codes = torch.nan_to_num(x[:, self.n_numeric :], nan=0.0)
            # Out-of-range codes from a client mean "unseen": map them to 0 like encode() does.
            codes = torch.where((codes < 0) | (codes > self.vocab_max), torch.zeros_like(codes), codes).long()
            parts += [emb(codes[:, i]) for i, emb in enumerate(self.embeddings)]
        return self.mlp(torch.cat(parts, dim=1)).squeeze(-1)


def matmul_macs_per_row(spec: FeatureSpec, config: ModelConfig) -> int:
    """Multiply-accumulates of :class:`TabularNet`'s linear layers for one row's forward pass: the work that
    decides whether bf16 autocast pays on a CPU (:data:`training.config.BF16_MIN_MACS_PER_STEP`)."""
    width = len(spec.numeric) + config.embedding_dim * len(spec.vocabularies)
    total = 0
    for hidden in (*config.hidden_units, 1):
        total += width * hidden
        width = hidden
    return total


def rank_step_macs(spec: FeatureSpec, config: TrainConfig) -> int:
    """Multiply-accumulates of one training step on one rank: its share of the batch × :func:`matmul_macs_per_row`."""
    return matmul_macs_per_row(spec, config.model) * max(1, config.batch_size // config.nproc)


def save_model(directory: Path, model: TabularNet) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), directory / MODEL_FILE)
    model.spec.save(directory / SPEC_FILE)
    (directory / CONFIG_FILE).write_text(model.config.model_dump_json(indent=2))
    return directory


def load_model(directory: Path) -> TabularNet:
    """Load a model saved by :func:`save_model`, in eval mode on CPU."""
    directory = Path(directory)
    for name in (MODEL_FILE, SPEC_FILE, CONFIG_FILE):
        if not (directory / name).is_file():
            raise FileNotFoundError(f"{directory} is not a saved model: {name} is missing")
    spec = FeatureSpec.load(directory / SPEC_FILE)
    config = ModelConfig.model_validate(json.loads((directory / CONFIG_FILE).read_text()))
    model = TabularNet(spec, config)
    model.load_state_dict(torch.load(directory / MODEL_FILE, map_location="cpu", weights_only=True))
    return model.eval()
